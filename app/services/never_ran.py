"""Cancelling a run none of whose workflow tasks ever completed: ended, not waited on.

A cancel reaches a workflow as an event its next workflow task handles. A run whose every
task fails (an input it cannot decode in time, a switch a newer release set) handles none:
the cancel was answered "the run stops shortly" and the run stayed `pending` for ever (an
outside audit). No task completed means no command was ever sent, so no step was scheduled
and nothing ran: the run is ended in the store as cancelled, like a run cancelled before
its start, and its workflow terminated. (A retried task completing between the look at
the history and the terminate is cut off by it: its steps end with the workflow, and the
store keeps the run cancelled.)
"""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from activities.start_claim import cancel_before_start
from activities.store.base import Store

_FAILED = frozenset(
    {EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT}
)


async def never_ran(handle: WorkflowHandle[object, object]) -> bool:
    """Whether a workflow task of the run failed and none completed (its history says so in
    its first few events: Temporal records a task's repeated failures once)."""
    failed = False
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return False
        failed = failed or event.event_type in _FAILED
    return failed


async def end_if_never_ran(
    store: Store, handle: WorkflowHandle[object, object], requested_by: str
) -> bool:
    """End the run as cancelled when no workflow task of it ever completed; whether it was."""
    if not await never_ran(handle):
        return False
    # A task completing meanwhile wrote the run (`started`): its cancel then goes on as any.
    if await cancel_before_start(store, handle.id, requested_by) not in (
        "cancelled",
        "overwritten",
    ):
        return False
    await handle.terminate(
        reason=f"cancel requested by {requested_by}; no workflow task of the run ever completed"
    )
    return True
