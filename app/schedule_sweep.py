"""Schedules a deleted workflow left in Temporal, deleted by the reconciler.

Deleting a workflow deletes its schedules; one the delete could not reach (Temporal down,
or made a moment before and not yet listed) deletes itself when it next fires and finds
no workflow. A paused one never fires, so it stayed in Temporal for good, 404 on every
path of the API. Every few minutes the reconciler lists the schedules Trellis makes
(`sched-…`) and deletes, with their skip logs, those whose workflow the store no longer
has. Only those whose trigger starts runs on this worker's task queue: another deployment
sharing the namespace keeps its own.
"""

from __future__ import annotations

from temporalio.client import Client, ScheduleActionStartWorkflow
from temporalio.service import RPCError, RPCStatusCode

from activities.scheduling import skip_log_key
from activities.store.base import Store
from app.services.schedules import trellis_trigger
from temporal_workflows import search_attributes

QUERY = "ScheduleId STARTS_WITH 'sched-'"


async def sweep_orphan_schedules(client: Client, store: Store, task_queue: str) -> list[str]:
    """Delete the schedules of workflows the store no longer has; their ids."""
    swept: list[str] = []
    async for listed in await client.list_schedules(query=QUERY):
        # The store first: only a schedule whose workflow is gone is described.
        workflow_id = listed.typed_search_attributes.get(search_attributes.DEFINITION_ID)
        if workflow_id is None or await store.get_workflow(workflow_id) is not None:
            continue
        handle = client.get_schedule_handle(listed.id)
        try:
            desc = await handle.describe()
            trigger = await trellis_trigger(client, desc)
            action = desc.schedule.action
            if (
                trigger is None
                or not isinstance(action, ScheduleActionStartWorkflow)
                or action.task_queue != task_queue
                or await store.get_workflow(trigger.workflow_id) is not None
            ):
                continue
            await handle.delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:  # deleted meanwhile: nothing to do
                raise
            continue
        await store.delete_events(skip_log_key(listed.id))
        swept.append(listed.id)
    return swept
