"""The schedules a workflow's creates are making, noted in the store before Temporal has
them, so the workflow's delete finds each by its id.

The delete lists the workflow's schedules in Temporal, whose list shows a new one a moment
late; a create that checked the workflow before the delete, and made its schedule as the
delete listed, was missed: the create answered 201, the delete 204, and the schedule
stayed in Temporal, 404 on every path of the API, until its next firing (next January,
for a yearly one). So a create notes its schedule's id, then makes it in Temporal, then
reads the workflow again; the delete deletes the workflow's records, then every schedule
noted for it, by id. Whichever comes first, one of them deletes the schedule: a note the
delete read is deleted by it (or, not made yet then, by the create, which finds the
workflow gone after making it); a note made after the delete read the notes comes after
the records went, and its create finds the workflow gone.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.scheduling import forget_schedule
from activities.store.base import Store
from app.auth.acl import not_found
from app.services.schedule_bound import BOUND

# The notes are read in pages of this many.
PAGE = 500


def notes_log(workflow_id: str) -> str:
    """The store's event-log key of the workflow's noted schedules."""
    return f"schedules-made:{workflow_id}"


async def note_making(store: Store, workflow_id: str, schedule_id: str) -> None:
    """Before the schedule is made in Temporal (once per id: a keyed repeat notes nothing)."""
    at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    event = {"type": "schedule_made", "scheduleId": schedule_id, "timestamp": at}
    await store.append_event(notes_log(workflow_id), event, key=schedule_id)


async def noted(store: Store, workflow_id: str) -> list[str]:
    """The ids of every schedule noted for the workflow (deleted ones too), oldest first."""
    ids: list[str] = []
    after = 0
    while page := await store.list_events(notes_log(workflow_id), after, PAGE):
        ids += [event["scheduleId"] for event in page]
        after = page[-1]["id"]
    return ids


async def forget_notes(store: Store, workflow_id: str) -> None:
    """After the workflow's delete has deleted the schedules noted."""
    await store.delete_events(notes_log(workflow_id))


async def require_workflow_kept(
    client: Client, store: Store, workflow_id: str, schedule_id: str
) -> None:
    """After the schedule is made: 404, as for a create on a missing workflow, when the
    workflow was deleted meanwhile, the schedule deleted (the workflow's delete may have
    read the notes before this one's)."""
    if await store.get_workflow(workflow_id) is not None:
        return
    try:
        await client.get_schedule_handle(schedule_id).delete()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:  # the workflow's delete got it first
            raise
    BOUND.deleted(schedule_id)
    await forget_schedule(store, schedule_id)
    raise not_found(workflow_id)
