"""The activity a schedule's trigger workflow calls: start a run, or record why not.

Temporal retries this activity with the same run id (the trigger workflow fixed it), so
a start Temporal refuses leaves the run `pending` for the next attempt to start; only
the last attempt marks it failed. An attempt cut off by its timeout marks nothing;
the next attempt or the reconciler (after 30 s) starts the run, whichever is first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.fired_by import fired_by
from activities.run_log import about_workflow
from activities.run_start import RunStarter, WorkflowDisabled, new_run_record
from activities.store.base import Store
from temporal_workflows.json_data import DEFAULT_MAX_OUTPUT_BYTES
from temporal_workflows.schedule_trigger import (
    START_SCHEDULED_RUN,
    ScheduledRunRequest,
    ScheduledRunResult,
    ScheduleTriggerInput,
    trigger_workflow_id,
)

DISABLED = "workflow disabled"
DELETED = "workflow deleted"
SCHEDULE_DELETED = "schedule deleted"


def skip_log_key(schedule_id: str) -> str:
    """The event-log key under which a schedule's skipped firings are recorded."""
    return f"schedule:{schedule_id}"


def skip_event(schedule_id: str, workflow_id: str, reason: str, at: datetime) -> dict[str, Any]:
    """A `schedule_skipped` event of the schedule's skip log: a firing that started no run."""
    return {
        "type": "schedule_skipped",
        "scheduleId": schedule_id,
        "workflowId": workflow_id,
        "reason": reason,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
    }


async def forget_schedule(store: Store, schedule_id: str) -> None:
    """What the store keeps of a deleted schedule: its skip log and fire-now requests go,
    its own payloads to the firings' sweep (a firing still running reads them). Every
    path that deletes a schedule calls this after the delete (the API's, a workflow's
    delete, the orphan sweep, a firing that finds its workflow gone), so a firing before
    it may still log a skip."""
    await store.delete_events(skip_log_key(schedule_id))
    await store.end_schedule_payloads(trigger_workflow_id(schedule_id))
    await store.delete_schedule_fires(schedule_id)


class SchedulingActivities:
    def __init__(
        self, store: Store, client: Client, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> None:
        self._store = store
        self._client = client
        self._max_output_bytes = max_output_bytes

    @activity.defn(name=START_SCHEDULED_RUN)
    async def start_scheduled_run(self, request: ScheduledRunRequest) -> ScheduledRunResult:
        """Create the run record and start its workflow, unless the definition cannot run."""
        # Its lines name the workflow whose schedule fired (its own workflow id is the
        # schedule's trigger, no run).
        with about_workflow(request.trigger.workflow_id):
            return await self._start_scheduled_run(request)

    async def _start_scheduled_run(self, request: ScheduledRunRequest) -> ScheduledRunResult:
        trigger = request.trigger
        workflow = await self._store.get_workflow(trigger.workflow_id)
        if workflow is None:
            # The definition is gone: stop the schedule so it does not fire forever, and
            # its skips go with it (no API can show them; an id made anew must not).
            await self._delete_schedule(trigger.schedule_id)
            await forget_schedule(self._store, trigger.schedule_id)
            activity.logger.info("schedule %s deleted: %s", trigger.schedule_id, DELETED)
            return ScheduledRunResult(skipped_reason=DELETED)
        if activity.info().attempt == 1 and not await self._schedule_exists(trigger.schedule_id):
            # The schedule was deleted since it fired (its firing waited for a worker, or a
            # delete came at the same moment as a fire-now): a deleted schedule starts
            # nothing. (Later attempts start what the first made.)
            activity.logger.info("schedule %s fired, then was deleted: no run", trigger.schedule_id)
            return ScheduledRunResult(skipped_reason=SCHEDULE_DELETED)
        starter = RunStarter(
            self._store,
            self._client,
            task_queue=activity.info().task_queue,
            default_gate_timeout_seconds=trigger.default_gate_timeout_seconds,
            max_output_bytes=self._max_output_bytes,
        )
        firing_id = activity.info().workflow_id
        record = new_run_record(
            workflow,
            "schedule",
            trigger.initial_input,
            run_id=request.run_id,
            # Who fired it now through the API (a retry claims the same; None: its time came).
            triggered_by=await fired_by(self._store, self._client, trigger.schedule_id, firing_id),
            schedule_id=trigger.schedule_id,
            trigger_workflow_id=firing_id,
        )
        try:
            await starter.start(workflow, record, mark_failed=_last_attempt())
        except WorkflowDisabled:
            return await self._skip(trigger, DISABLED)
        return ScheduledRunResult(run_id=record.id)

    async def _skip(self, trigger: ScheduleTriggerInput, reason: str) -> ScheduledRunResult:
        event = skip_event(trigger.schedule_id, trigger.workflow_id, reason, datetime.now(UTC))
        await self._store.append_event(skip_log_key(trigger.schedule_id), event)
        if not await self._still_there(trigger):
            # The workflow or the schedule was deleted since this firing read the workflow:
            # the delete swept the skips (after the records, after the schedule), maybe
            # before this one was written, so this writer takes it back.
            await self._store.delete_events(skip_log_key(trigger.schedule_id))
            activity.logger.info("schedule %s skip dropped: deleted", trigger.schedule_id)
            return ScheduledRunResult(skipped_reason=DELETED)
        activity.logger.info("schedule %s skipped: %s", trigger.schedule_id, reason)
        return ScheduledRunResult(skipped_reason=reason)

    async def _still_there(self, trigger: ScheduleTriggerInput) -> bool:
        """Whether the workflow is in the store and the schedule in Temporal."""
        if await self._store.get_workflow(trigger.workflow_id) is None:
            return False
        return await self._schedule_exists(trigger.schedule_id)

    async def _schedule_exists(self, schedule_id: str) -> bool:
        try:
            await self._client.get_schedule_handle(schedule_id).describe()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            return False
        return True

    async def _delete_schedule(self, schedule_id: str) -> None:
        try:
            await self._client.get_schedule_handle(schedule_id).delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise

    def all(self) -> list[Any]:
        return [self.start_scheduled_run]


def _last_attempt() -> bool:
    """Whether Temporal gives up on this activity if this attempt fails."""
    info = activity.info()
    limit = info.retry_policy.maximum_attempts if info.retry_policy else 0
    return 0 < limit <= info.attempt
