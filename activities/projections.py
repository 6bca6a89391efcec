"""Idempotent writes of the read model (run and node-run records, run events).

Called as local activities by the interpreter; revisions make retries and
out-of-order writes harmless.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.store.base import Store
from temporal_workflows.contracts import (
    NOW,
    RECORD_NODE_RUN,
    RECORD_RUN,
    NodeRunProjection,
    RunProjection,
)


class ProjectionActivities:
    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn(name=RECORD_RUN)
    async def record_run(self, projection: RunProjection) -> None:
        """Apply a change to the run record and log its event."""
        await self._store.update_run(
            projection.run_id, projection.rev, _stamped(projection.changes), projection.event
        )

    @activity.defn(name=RECORD_NODE_RUN)
    async def record_node_run(self, projection: NodeRunProjection) -> None:
        """Merge fields into a node-run record and log its event."""
        await write_node_run(self._store, projection.record, projection.event)

    def all(self) -> list[Any]:
        return [self.record_run, self.record_node_run]


async def write_node_run(
    store: Store, fields: dict[str, Any], event: dict[str, Any] | None
) -> bool:
    """Merge `fields` into the stored node run (or create it); append the event if applied."""
    return await store.merge_node_run(_stamped(fields), [] if event is None else [event])


def _stamped(fields: dict[str, Any]) -> dict[str, Any]:
    """Replace NOW placeholders with this activity's clock (see the interpreter)."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {k: (now if v == NOW else v) for k, v in fields.items()}
