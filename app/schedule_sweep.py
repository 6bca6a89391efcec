"""Paused schedules a deleted workflow left in Temporal, deleted by the reconciler.

Deleting a workflow deletes its schedules; one the delete could not reach (Temporal down)
deletes itself when it next fires and finds
no workflow. A paused one never fires, so it stayed in Temporal for good, 404 on every
path of the API. The reconciler lists the schedules Trellis makes (`sched-…`) at its
start and then every few minutes, and deletes, with its skip log, a paused one whose
workflow the store does not have, on two sweeps at least `min_age` apart: a worker
started against the wrong store (a mistyped database name, an empty data directory)
must not delete a deployment's schedules at its first look. Only those whose trigger
starts runs on this worker's task queue (another deployment sharing the namespace keeps
its own), and none while the store holds no workflow at all.
"""

from __future__ import annotations

import time
from datetime import timedelta

from temporalio.client import Client, ScheduleActionStartWorkflow
from temporalio.service import RPCError, RPCStatusCode

from activities.scheduling import forget_schedule
from activities.store.base import Store
from app.services.schedules import trellis_trigger
from temporal_workflows import search_attributes

QUERY = "ScheduleId STARTS_WITH 'sched-'"


class OrphanSchedules:
    def __init__(self, client: Client, store: Store, task_queue: str, min_age: timedelta) -> None:
        self._client = client
        self._store = store
        self._task_queue = task_queue
        self._min_age = min_age.total_seconds()
        # Schedule id → monotonic time it was first seen orphaned (and is still).
        self._seen: dict[str, float] = {}

    async def sweep(self) -> list[str]:
        """Delete the paused schedules seen orphaned since at least `min_age`; their ids."""
        _, workflows = await self._store.list_workflows(None, 1, 1)
        if workflows == 0:
            self._seen.clear()  # an empty store is no evidence of anything
            return []
        now, orphans = time.monotonic(), await self._orphans()
        self._seen = {sid: self._seen.get(sid, now) for sid in orphans}
        swept: list[str] = []
        for schedule_id, since in list(self._seen.items()):
            if now - since < self._min_age:
                continue
            try:
                await self._client.get_schedule_handle(schedule_id).delete()
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:  # deleted meanwhile: done
                    raise
            await forget_schedule(self._store, schedule_id)
            del self._seen[schedule_id]
            swept.append(schedule_id)
        return swept

    async def _orphans(self) -> list[str]:
        """The paused schedules of ours, on this task queue, whose workflow is gone."""
        found: list[str] = []
        async for listed in await self._client.list_schedules(query=QUERY):
            # The store first: only a schedule whose workflow is gone is described.
            workflow_id = listed.typed_search_attributes.get(search_attributes.DEFINITION_ID)
            if workflow_id is None or await self._store.get_workflow(workflow_id) is not None:
                continue
            try:
                desc = await self._client.get_schedule_handle(listed.id).describe()
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                continue
            trigger = await trellis_trigger(self._client, desc)
            action = desc.schedule.action
            if (
                trigger is None
                or not desc.schedule.state.paused  # an active one deletes itself when it fires
                or not isinstance(action, ScheduleActionStartWorkflow)
                or action.task_queue != self._task_queue
                or await self._store.get_workflow(trigger.workflow_id) is not None
            ):
                continue
            found.append(listed.id)
        return found
