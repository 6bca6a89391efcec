"""Idempotent writes of the read model (run and node-run records, run events).

Called as local activities by the interpreter; revisions make retries and
out-of-order writes harmless.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.store.base import Store
from temporal_workflows.contracts import (
    NOW,
    RECORD_BATCH,
    ProjectionBatch,
)


class ProjectionActivities:
    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn(name=RECORD_BATCH)
    async def record_batch(self, batch: ProjectionBatch) -> None:
        """Apply a batch of writes in order (SQLite commits them in one transaction)."""
        runs, node_runs = iter(batch.runs), iter(batch.node_runs)
        writes = []
        for kind in batch.order:
            if kind == "r":
                p = next(runs)
                writes.append(self._store.update_run(p.run_id, p.rev, _stamped(p.changes), p.event))
            else:
                n = next(node_runs)
                writes.append(write_node_run(self._store, n.record, n.events))
        # Started in order, so a group-committing store queues them in order.
        await asyncio.gather(*writes)

    def all(self) -> list[Any]:
        return [self.record_batch]


async def write_node_run(
    store: Store, fields: dict[str, Any], events: list[dict[str, Any]]
) -> bool:
    """Merge `fields` into the stored node run (or create it); append the events if applied."""
    return await store.merge_node_run(_stamped(fields), events)


def _stamped(fields: dict[str, Any]) -> dict[str, Any]:
    """Replace NOW placeholders with this activity's clock (see the interpreter)."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {k: (now if v == NOW else v) for k, v in fields.items()}
