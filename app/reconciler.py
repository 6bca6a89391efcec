"""Corrects the read model for runs Temporal closed without the workflow recording its end,
and starts runs whose workflow never started.

Terminated from the Web UI, timed out, or failed by a bug: the workflow never got to write
its final status, so its search attribute still says it is open. One visibility query finds
exactly those runs. Only a workflow id's latest execution speaks for its run: a reset
terminates the execution it starts from, and the run goes on in the new one.

A sweep of the store's open runs, at start and then every few minutes, asks Temporal which
of them are closed: a store restored from a copy older than Temporal's state (a backup)
shows runs open that ended since, whose workflows did record their ends (in the store that
was replaced). Such a run is closed as Temporal closed it, with its result.

A store sweep finds runs recorded but never started (the API died between the record and
the start) and starts them: the run id is the workflow id, so a start racing another is
harmless.

It also deletes the cron-check probe schedules an API left behind when it died mid-check
(app/services/schedule_timing.py), at start and then once a minute.

Every worker runs one; several never correct a run twice: a correction is written
`newer_only` at `RECONCILED_REV`, so exactly one of them applies it (and only that one
closes the node runs and logs the event).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta
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
from activities.run_start import RunStarter, RunStartFailed, WorkflowDisabled
from activities.store.base import Store
from activities.store.node_run_pages import node_run_pages
from activities.store.records import RunRecord
from app.services.schedule_timing import PROBE_MAX_AGE, sweep_probes
from app.temporal_outage import outage_cause
from temporal_workflows.contracts import WORKFLOW_TYPE, RunResult
from temporal_workflows.json_data import DEFAULT_MAX_OUTPUT_BYTES
from temporal_workflows.read_model import (
    OPEN_NODE_STATUSES,
    OPEN_RUN_STATUSES,
    RECONCILED_REV,
    NodeRunStatus,
    node_event,
    run_event,
)

log = logging.getLogger("trellis.reconciler")
# An outage is one WARNING when it starts and one INFO when it ends; in between, a
# reminder this often, so a long outage neither floods the log nor goes silent.
OUTAGE_REMINDER = timedelta(minutes=5)
# A closed workflow's search attributes cannot change, so a corrected run keeps matching
# the query until Temporal's retention removes it; `_correct` skips it cheaply (the store
# already has it terminal).

ORPHAN_QUERY = (
    "ExecutionStatus != 'Running' AND TrellisRunStatus IN ("
    + ", ".join(f"'{s}'" for s in OPEN_RUN_STATUSES)
    + ")"
)
# How often the store's open runs are compared with Temporal (a restored store), and how
# many are asked about in one visibility query, and read from the store in one page.
OPEN_SWEEP_EVERY = timedelta(minutes=5)
OPEN_SWEEP_BATCH = 100
OPEN_SWEEP_PAGE = 500


class Reconciler:
    def __init__(
        self,
        client: Client,
        store: Store,
        *,
        task_queue: str,
        interval: float = 5.0,
        never_started_after: timedelta = timedelta(seconds=30),
        metrics: RunMetrics | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        outage_reminder: timedelta = OUTAGE_REMINDER,
        probe_max_age: timedelta = PROBE_MAX_AGE,
        open_sweep_every: timedelta = OPEN_SWEEP_EVERY,
    ) -> None:
        self._client = client
        self._address = client.service_client.config.target_host
        # Monotonic times the current outage began and was last reported; None while
        # Temporal answers (so the next good pass says it is back, once).
        self._down_since: float | None = None
        self._down_reported: float = 0.0
        self._outage_reminder = outage_reminder.total_seconds()
        self._metrics = metrics or RunMetrics()
        self._store = store
        self._interval = interval
        self._never_started_after = never_started_after
        self._task_queue = task_queue
        self._starter = RunStarter(store, client, task_queue, max_output_bytes=max_output_bytes)
        self._probe_max_age = probe_max_age
        # Monotonic time of the last probe sweep (None: at the first pass).
        self._probes_swept_at: float | None = None
        self._open_sweep_every = open_sweep_every.total_seconds()
        # Monotonic time of the last sweep of the store's open runs (None: at the first pass).
        self._open_swept_at: float | None = None

    async def run_forever(self) -> None:
        """Reconcile every `interval` seconds until cancelled; errors are logged, not fatal."""
        while True:
            try:
                await self.reconcile_once()
                await self._sweep_probes()
                if self._down_since is not None:
                    down_for = time.monotonic() - self._down_since
                    self._down_since = None
                    log.info(
                        "reconciliation resumed: Temporal at %s answers again"
                        " (unreachable for %.0fs)",
                        self._address,
                        down_for,
                    )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._log_failed_pass(exc)
            await asyncio.sleep(self._interval)

    def _log_failed_pass(self, exc: Exception) -> None:
        """An outage is one WARNING when it starts and a reminder every `outage_reminder`
        (each pass retries; the worker's pollers and the SDK say the same); anything else
        is a bug, logged every pass with its traceback."""
        cause = outage_cause(exc)
        if cause is None:
            log.exception("reconciliation pass failed")
            return
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = self._down_reported = now
            log.warning(
                "reconciliation paused: Temporal at %s is unreachable (%s); retrying every %gs,"
                " reminding every %gs",
                self._address,
                cause,
                self._interval,
                self._outage_reminder,
            )
        elif now - self._down_reported >= self._outage_reminder:
            self._down_reported = now
            log.warning(
                "reconciliation still paused: Temporal at %s is unreachable for %.0fs (%s)",
                self._address,
                now - self._down_since,
                cause,
            )

    async def reconcile_once(self) -> list[str]:
        """One pass; returns the ids of the runs it corrected."""
        corrected: list[str] = []
        async for execution in self._client.list_workflows(ORPHAN_QUERY):
            if await self._correct(execution):
                corrected.append(execution.id)
        corrected += await self._sweep_open_runs()
        corrected += await self._sweep_never_started()
        return corrected

    async def _sweep_open_runs(self) -> list[str]:
        """Close the store's open runs whose workflows Temporal has closed, at most once per
        `open_sweep_every` (a visibility query per `OPEN_SWEEP_BATCH` runs)."""
        now = time.monotonic()
        if self._open_swept_at is not None:
            if now - self._open_swept_at < self._open_sweep_every:
                return []
        else:
            await self._tell_of_runs_the_store_lacks()
        ids: list[str] = []
        for status in OPEN_RUN_STATUSES:
            page = 1
            while True:
                runs, total = await self._store.list_runs(
                    None, status=status, page=page, per_page=OPEN_SWEEP_PAGE
                )
                ids += [r.id for r in runs]
                if not runs or page * OPEN_SWEEP_PAGE >= total:
                    break
                page += 1
        corrected: list[str] = []
        for start in range(0, len(ids), OPEN_SWEEP_BATCH):
            named = ", ".join(f"'{i}'" for i in ids[start : start + OPEN_SWEEP_BATCH])
            query = f"WorkflowId IN ({named}) AND ExecutionStatus != 'Running'"
            async for execution in self._client.list_workflows(query):
                if await self._correct(execution):
                    corrected.append(execution.id)
        self._open_swept_at = now
        return corrected

    async def _tell_of_runs_the_store_lacks(self) -> None:
        """Said once, at the first pass: runs open in Temporal on this task queue that the
        store does not have (a store deleted, replaced, or restored from an older copy). No
        API shows or steers them, and they go on calling their steps."""
        query = (
            f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
            f" AND TaskQueue = '{self._task_queue}'"
        )
        missing = [
            execution.id
            async for execution in self._client.list_workflows(query)
            if await self._store.get_run(execution.id) is None
        ]
        if missing:
            log.warning(
                "%d run(s) open in Temporal on task queue %s are not in the store (was it"
                " deleted, replaced or restored from an older copy?): no API shows or steers"
                " them; end them in the Web UI or with `temporal workflow terminate`: %s",
                len(missing),
                self._task_queue,
                ", ".join(missing[:5]) + (", …" if len(missing) > 5 else ""),
            )

    async def _sweep_probes(self) -> None:
        """Delete left-over cron-check probes, at most once per `probe_max_age` (a probe
        is never needed longer; listing schedules every pass would cost for nothing)."""
        now = time.monotonic()
        if self._probes_swept_at is not None:
            if now - self._probes_swept_at < self._probe_max_age.total_seconds():
                return
        for probe_id in await sweep_probes(self._client, self._probe_max_age):
            log.warning("deleted cron-check schedule %s, left by an API that stopped", probe_id)
        self._probes_swept_at = now

    async def _correct(self, execution: WorkflowExecution) -> bool:
        run_id, closed_at = execution.id, execution.close_time
        run = await self._store.get_run(run_id)
        if run is None or run.status not in OPEN_RUN_STATUSES:
            return False
        if execution.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
            return False
        if not await self._latest(execution):
            return False
        new_status, reason, output = await self._verdict(execution)
        finished = (closed_at or datetime.now(UTC)).isoformat()
        changes: dict[str, Any] = {
            "status": new_status,
            "finished_at": finished,
            "error_summary": reason,
            "pending_requirements": [],
        }
        if output is not None:
            changes["final_output"] = output
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
        node_status: NodeRunStatus = "cancelled" if new_status == "cancelled" else "failed"
        async for page in node_run_pages(self._store, run_id):
            for node_run in page:
                if node_run.status in OPEN_NODE_STATUSES:
                    node_run.status = node_status
                    node_run.error = reason
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
                                error=reason,
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

    async def _sweep_never_started(self) -> list[str]:
        """Start pending runs whose workflow Temporal does not know (the API died mid-start)."""
        corrected: list[str] = []
        cutoff = datetime.now(UTC) - self._never_started_after
        for run in await self._store.list_unstarted_runs(cutoff):
            try:
                await self._client.get_workflow_handle(run.id).describe()
                continue
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
            if await self._start(run):
                corrected.append(run.id)
        return corrected

    async def _start(self, run: RunRecord) -> bool:
        """Start a never-started run; fail it only when it can no longer run at all."""
        workflow = await self._store.get_workflow(run.workflow_definition_id)
        if workflow is None:
            return await self._fail_unstarted(run, "its workflow was deleted before it started")
        try:
            await self._starter.start(workflow, run, mark_failed=False)
        except WorkflowDisabled:
            return await self._fail_unstarted(run, "its workflow was disabled before it started")
        except RunStartFailed as exc:
            log.warning(
                "could not start never-started run %s: %s",
                run.id,
                exc.reason,
                extra=run_fields(run.id, run.workflow_definition_id),
            )
            return False
        log.warning(
            "started run %s, recorded but never started",
            run.id,
            extra=run_fields(run.id, run.workflow_definition_id),
        )
        return True

    async def _fail_unstarted(self, run: RunRecord, why: str) -> bool:
        applied = await self._store.update_run(
            run.id,
            RECONCILED_REV,
            {
                "status": "failed",
                "finished_at": datetime.now(UTC).isoformat(),
                "error_summary": f"The run could not be started: {why}",
            },
            event={
                "type": "run_failed",
                "runId": run.id,
                "status": "failed",
                "reason": why,
                "timestamp": datetime.now(UTC).isoformat(),
            },
            newer_only=True,
        )
        if applied:
            self._metrics.run_ended(run.workflow_definition_id, "failed")
        return applied
