"""How the reconciler closes a run Temporal closed without the store having its end: the
verdict read from Temporal (the close event's reason, the workflow's result), the run's
end written once across reconcilers (`newer_only` at `RECONCILED_REV`), its open node runs
closed, and each end logged as an event.

Only a workflow id's latest execution speaks for its run: a reset terminates the
execution it starts from, and the run goes on in the new one.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionStatus,
    WorkflowHistoryEventFilterType,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.metrics import GATES_CLOSED_BY, RunMetrics
from activities.run_log import run_fields
from activities.store.base import Store
from activities.store.node_run_pages import node_run_pages
from activities.store.records import RunRecord
from app.temporal_outage import outage_cause
from temporal_workflows.contracts import RunResult
from temporal_workflows.read_model import (
    OPEN_NODE_STATUSES,
    OPEN_RUN_STATUSES,
    RECONCILED_REV,
    NodeRunStatus,
    node_event,
    run_event,
)

log = logging.getLogger("trellis.reconciler")

# Why a run whose workflow Temporal no longer has is closed (`temporal workflow delete`, a
# restored store).
LOST_REASON = (
    "Its workflow is no longer in Temporal (deleted by an operator, past the namespace's"
    " retention, or Temporal's state was replaced) and the store has no end for it"
)
# The status a correction gives the open node runs of a run it closes.
NODE_ENDS: dict[str, NodeRunStatus] = {"completed": "completed", "cancelled": "cancelled"}


class RunCorrection:
    def __init__(self, client: Client, store: Store, metrics: RunMetrics) -> None:
        self._client = client
        self._store = store
        self._metrics = metrics

    async def correct(self, execution: WorkflowExecution) -> bool:
        """Close the run of a closed execution as Temporal closed it, if the store has it
        open and the execution is its workflow's latest."""
        if execution.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            return False  # the run goes on in the next execution
        run = await self._store.get_run(execution.id)
        if run is None or run.status not in OPEN_RUN_STATUSES:
            return False
        if not await self._latest(execution):
            return False
        new_status, reason, output = await self._verdict(execution)
        return await self._close(
            run, new_status, reason, execution.close_time, output, execution.run_id
        )

    async def close_lost(self, run_id: str) -> bool:
        """Close a run whose workflow Temporal no longer has at all."""
        run = await self._store.get_run(run_id)
        if run is None or run.status not in OPEN_RUN_STATUSES:
            return False
        return await self._close(run, "failed", LOST_REASON, None, None)

    async def _close(
        self,
        run: RunRecord,
        new_status: str,
        reason: str,
        closed_at: datetime | None,
        output: Any,
        execution: str | None = None,
    ) -> bool:
        """Write the run's end, close its open node runs, log their ends and its own;
        exactly once across reconcilers (`newer_only` at `RECONCILED_REV`).

        `execution` is the Temporal execution it closes: the end is that execution's, so
        a newer one (a reset's) takes the run over from it, and the end is refused once a
        newer one has (activities/store/executions.py)."""
        run_id = run.id
        finished = (closed_at or datetime.now(UTC)).isoformat()
        changes: dict[str, Any] = {
            "status": new_status,
            "finished_at": finished,
            "error_summary": reason,
            "pending_requirements": [],
        }
        if output is not None:
            changes["final_output"] = output
        if execution is not None:
            changes["execution"] = execution
        applied = await self._store.update_run(run_id, RECONCILED_REV, changes, newer_only=True)
        if not applied:
            return False
        self._metrics.run_ended(run.workflow_definition_id, new_status)
        # The gates it was waiting at close with it, undecided: their waits are observed as
        # the worker observes a cancelled or failed run's (the workflow never wrote its end).
        if resolution := GATES_CLOSED_BY.get(f"run_{new_status}"):
            self._metrics.gates_closed(
                run.workflow_definition_id, run.pending_requirements, finished, resolution
            )
        # Each open node run is closed with its end event, before the run's: a stream
        # following the run ends at the run's end, and shows every node's before it.
        # A completed run's open node runs ended well (the run would not have): the store
        # lost their ends, and their outputs with them.
        node_status = NODE_ENDS.get(new_status, "failed")
        async for page in node_run_pages(self._store, run_id):
            for node_run in page:
                if node_run.status in OPEN_NODE_STATUSES:
                    node_run.status = node_status
                    node_run.error = None if node_status == "completed" else reason
                    node_run.finished_at = closed_at or datetime.now(UTC)
                    node_run.rev = RECONCILED_REV
                    if await self._store.upsert_node_run(node_run):
                        await self._store.append_event(
                            run_id,
                            node_event(
                                f"node_{node_status}",
                                run_id=run_id,
                                node_run_id=node_run.id,
                                node_id=node_run.node_id,
                                node_name=node_run.node_name,
                                status=node_status,
                                timestamp=finished,
                                **({} if node_run.error is None else {"error": reason}),
                            ),
                        )
        await self._store.append_event(
            run_id,
            run_event(f"run_{new_status}", run_id=run_id, status=new_status, timestamp=finished)
            | {"reason": reason},
        )
        log.warning(
            "reconciled run %s: %s (%s)",
            run_id,
            new_status,
            reason,
            extra=run_fields(run_id, run.workflow_definition_id),
        )
        return True

    async def _latest(self, execution: WorkflowExecution) -> bool:
        """Whether `execution` is its workflow id's latest: a reset terminates the execution
        it starts from, and the run goes on in the new one (which records its own end)."""
        try:
            latest = await self._client.get_workflow_handle(execution.id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return False  # gone with Temporal's retention meanwhile
            raise
        return latest.run_id == execution.run_id

    async def _verdict(self, execution: WorkflowExecution) -> tuple[str, str, Any]:
        """The run's status, the reason it is given, and its final output when known."""
        status = execution.status
        if status == WorkflowExecutionStatus.TERMINATED:
            # Temporal terminates a run that outgrew its history, and operators terminate
            # what is stuck: either way the run did not finish its work, and it was not a
            # cancel anyone asked Trellis for.
            reason = await self._close_reason(execution)
            return "failed", f"Terminated in Temporal{': ' + reason if reason else ''}", None
        if status == WorkflowExecutionStatus.TIMED_OUT:
            return "failed", "Timed out in Temporal", None
        if status == WorkflowExecutionStatus.CANCELED:
            return "cancelled", "Cancelled in Temporal", None
        if status == WorkflowExecutionStatus.COMPLETED:
            # Its end is in its result: a run cancelled by a gate completes as a workflow.
            result = await self._result(execution)
            if result is not None and result.status == "cancelled":
                return "cancelled", result.error_summary or "Cancelled in Temporal", None
            output = None if result is None else result.final_output
            return "completed", "Completed in Temporal without its end in the store", output
        reason = await self._close_reason(execution)
        return "failed", reason or "Failed in Temporal without its end in the store", None

    async def _result(self, execution: WorkflowExecution) -> RunResult | None:
        """A completed run's result; None when it cannot be read (a payload it names was
        lost with the store that held it)."""
        handle = self._client.get_workflow_handle(
            execution.id, run_id=execution.run_id, result_type=RunResult
        )
        try:
            result: RunResult = await handle.result(follow_runs=False)
        except Exception as exc:
            if outage_cause(exc) is not None:
                raise
            log.warning("could not read the result of run %s: %s", execution.id, exc)
            return None
        return result

    async def _close_reason(self, execution: WorkflowExecution) -> str:
        """A terminated run's reason, a failed one's failure message ("" when unknown)."""
        handle = self._client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            async for event in handle.fetch_history_events(
                event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                if event.HasField("workflow_execution_failed_event_attributes"):
                    return event.workflow_execution_failed_event_attributes.failure.message
                return event.workflow_execution_terminated_event_attributes.reason
        except RPCError:
            return ""
        return ""
