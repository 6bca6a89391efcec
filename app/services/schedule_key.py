"""Schedule creates under an `Idempotency-Key`: the key names the schedule.

As for runs (app/services/idempotency.py), the schedule's id is derived from the
workflow's id and the key, so a repeat, or a concurrent first use, collides on it in
Temporal and is answered with the schedule the first use made, if it asked for the same;
anything else is 409. Nothing about schedules is in our store: what the first use asked
for is kept on the schedule as a memo (Temporal keeps it through updates), one digest
per field, since an `initialInput` may be large and the memo only has to compare.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from temporalio.client import ScheduleDescription

from app.schemas.schedule import ScheduleCreate
from app.services.idempotency import Asked, asker, canonical, require_same
from temporal_workflows.contracts import Identity

MEMO = "trellisCreateRequest"
# Who created the schedule (the caller's `sub`), kept on every schedule Trellis makes.
CREATOR = "trellisCreatedBy"


def keyed_suffix(workflow_id: str, key: str) -> str:
    """The schedule id's own part for the key (after `sched-{workflowId}-`)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"trellis:schedule:{workflow_id}:{key}").hex[:12]


def create_request(body: ScheduleCreate, caller: Identity | None) -> Asked:
    """What a create asks for, by wire name (a default left out or written out alike),
    with who asks: a key is the caller's own."""
    asked: dict[str, Any] = {**body.model_dump(mode="json"), "createdBy": asker(caller)}
    return {name: _digest(value) for name, value in asked.items()}


async def require_first_request(desc: ScheduleDescription, asked: Asked) -> None:
    """Conflict (409) naming what differs, unless the schedule was made by `asked`."""
    first = await desc.memo_value(MEMO, default={})
    require_same(first, asked, "schedule", desc.id)


def _digest(value: Any) -> str:
    # Numbers equal in value digest alike, as a run trigger's key compares them.
    return hashlib.sha256(canonical(value).encode()).hexdigest()
