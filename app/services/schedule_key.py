"""Schedule creates under an `Idempotency-Key`: the key names the schedule.

As for runs (app/services/idempotency.py), the schedule's id is derived from the
workflow's id and the key, so a repeat, or a concurrent first use, collides on it in
Temporal and is answered with the schedule the first use made, if it asked for the same;
anything else is 409. Nothing about schedules is in our store: what the first use asked
for is kept on the schedule as a memo (Temporal keeps it through updates), one digest
per field, since an `initialInput` may be large and the memo only has to compare.

A keyed schedule deleted through the API leaves a mark in the store under its id, and the
key then names another id (derived from the deleted one's): a schedule made anew under
the key is a new schedule, whose runs (`GET …/runs?scheduleId=`) are its own, not the
deleted one's with them. A repeat whose answer was lost, the schedule still there, still
finds it.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from temporalio.client import ScheduleDescription

from activities.store.base import Store
from app.schemas.schedule import ScheduleCreate
from app.services.idempotency import Asked, asker, canonical, require_same
from temporal_workflows.contracts import Identity

MEMO = "trellisCreateRequest"
# Who created the schedule (the caller's `sub`), kept on every schedule Trellis makes.
CREATOR = "trellisCreatedBy"


def keyed_suffix(workflow_id: str, key: str) -> str:
    """The schedule id's own part for the key (after `sched-{workflowId}-`), its first use."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"trellis:schedule:{workflow_id}:{key}").hex[:12]


def deleted_log(schedule_id: str) -> str:
    """The store's event-log key marking a keyed schedule deleted through the API."""
    return f"schedule-deleted:{schedule_id}"


async def keyed_id(store: Store, prefix: str, workflow_id: str, key: str) -> str:
    """The id the key names now: its first use's, or after each delete of the schedule it
    named, one derived from that (a chain as long as the key's schedules were deleted)."""
    schedule_id = f"{prefix}{keyed_suffix(workflow_id, key)}"
    while await store.last_event_id(deleted_log(schedule_id)):
        remade = uuid.uuid5(uuid.NAMESPACE_URL, f"trellis:schedule-remade:{schedule_id}")
        schedule_id = f"{prefix}{remade.hex[:12]}"
    return schedule_id


async def mark_deleted(store: Store, desc: ScheduleDescription, at: str) -> None:
    """After a keyed schedule's delete: its key names another id from now on."""
    if await desc.memo_value(MEMO, default=None) is None:
        return  # made without a key: no repeat can name it
    event = {"type": "schedule_deleted", "scheduleId": desc.id, "timestamp": at}
    await store.append_event(deleted_log(desc.id), event, key="deleted")


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
