"""Corrects the read model for runs Temporal closed without the workflow recording its end,
and starts runs whose workflow never started.

Terminated from the Web UI, timed out, or failed by a bug: the workflow never got to write
its final status, so its search attribute still says it is open. One visibility query finds
exactly those runs, every pass; `run_correction.py` closes each as Temporal closed it.
`store_sweep.py` asks the other way round, every few minutes: which of the store's open
runs Temporal has closed (a store restored from an older copy).

A store sweep finds runs recorded but never started (the API died between the record and
the start) and starts them: the run id is the workflow id, so a start racing another is
harmless.

It also deletes the cron-check probe schedules an API left behind when it died mid-check
(app/services/schedule_timing.py), at start and then once a minute, given a run
retention, the runs that ended longer ago (app/run_retention.py), and schedule firings'
own large payloads (and those a delete handed over) once Temporal has closed their
workflows (app/firing_payloads.py).

Every worker runs one; several never correct a run twice: a correction is written
`newer_only` at `RECONCILED_REV`, so exactly one of them applies it (and only that one
closes the node runs and logs the event).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from temporalio.client import (
    Client,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.metrics import RunMetrics
from activities.run_log import run_fields
from activities.run_start import RunStarter, RunStartFailed, WorkflowDisabled
from activities.store.base import Store
from activities.store.records import RunRecord
from app.firing_payloads import FiringPayloads
from app.run_correction import RunCorrection
from app.run_retention import EVERY as RETENTION_EVERY
from app.run_retention import RunRetention
from app.schedule_sweep import OrphanSchedules
from app.services.schedule_timing import PROBE_MAX_AGE, sweep_probes
from app.store_sweep import EVERY as STORE_SWEEP_EVERY
from app.store_sweep import StoreSweep
from app.temporal_outage import outage_cause
from temporal_workflows.json_data import DEFAULT_MAX_OUTPUT_BYTES
from temporal_workflows.read_model import (
    OPEN_RUN_STATUSES,
    RECONCILED_REV,
)

log = logging.getLogger("trellis.reconciler")
# An outage is one WARNING when it starts and one INFO when it ends; in between, a
# reminder this often, so a long outage neither floods the log nor goes silent.
OUTAGE_REMINDER = timedelta(minutes=5)
# A closed workflow's search attributes cannot change, so a corrected run keeps matching
# the query until Temporal's retention removes it; `RunCorrection.correct` skips it cheaply
# (the store already has it terminal).

ORPHAN_QUERY = (
    "ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew'"
    " AND TrellisRunStatus IN (" + ", ".join(f"'{s}'" for s in OPEN_RUN_STATUSES) + ")"
)


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
        open_sweep_every: timedelta = STORE_SWEEP_EVERY,
        run_retention: timedelta | None = None,
        retention_every: timedelta = RETENTION_EVERY,
        firing_payloads: FiringPayloads | None = None,
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
        self._starter = RunStarter(store, client, task_queue, max_output_bytes=max_output_bytes)
        self._probe_max_age = probe_max_age
        # Monotonic time of the last probe sweep (None: at the first pass).
        self._probes_swept_at: float | None = None
        # Monotonic time of the last sweep of schedules left by deleted workflows.
        self._schedules_swept_at: float | None = None
        self._schedules_every = open_sweep_every.total_seconds()
        self._orphan_schedules = OrphanSchedules(client, store, task_queue, open_sweep_every)
        self._correction = RunCorrection(client, store, self._metrics)
        self._store_sweep = StoreSweep(
            client,
            store,
            task_queue,
            correct=self._correction.correct,
            close_lost=self._correction.close_lost,
            every=open_sweep_every,
        )
        self._retention = (
            None
            if run_retention is None
            else RunRetention(store, run_retention, self._metrics, retention_every)
        )
        self._firing_payloads = firing_payloads or FiringPayloads(client, store, self._metrics)

    async def run_forever(self) -> None:
        """Reconcile every `interval` seconds until cancelled; errors are logged, not fatal."""
        while True:
            try:
                await self.reconcile_once()
                await self._sweep_probes()
                await self._sweep_orphan_schedules()
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
            # Apart: they need the store only, and another sweep's failure must not skip them.
            await self._sweep_ended_runs()
            await self._sweep_firing_payloads()
            await asyncio.sleep(self._interval)

    async def _sweep_ended_runs(self) -> None:
        """The run retention's pass, when it has one."""
        if self._retention is not None:
            await _logged_sweep("run retention's", self._retention.run_if_due)

    async def _sweep_firing_payloads(self) -> None:
        """Schedule firings' own payloads (app/firing_payloads.py), with or without run
        retention."""
        await _logged_sweep("firings' payload", self._firing_payloads.run_if_due)

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
            if await self._correction.correct(execution):
                corrected.append(execution.id)
        corrected += await self._store_sweep.run_if_due()
        corrected += await self._sweep_never_started()
        return corrected

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

    async def _sweep_orphan_schedules(self) -> None:
        """Delete paused schedules a deleted workflow left in Temporal (app/schedule_sweep.py):
        a look at the first pass, then as often as the store's open runs are swept; one is
        deleted on the second look that finds it orphaned."""
        now = time.monotonic()
        if self._schedules_swept_at is not None:
            if now - self._schedules_swept_at < self._schedules_every:
                return
        for schedule_id in await self._orphan_schedules.sweep():
            log.warning("deleted paused schedule %s: its workflow was deleted", schedule_id)
        self._schedules_swept_at = now

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


async def _logged_sweep(name: str, run_if_due: Callable[[], Awaitable[object]]) -> None:
    """A sweep's pass; a failure is one WARNING line, and the sweep is tried again at its
    next time (app/sweep_pacing.py)."""
    try:
        await run_if_due()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("%s sweep failed (tried again at its next sweep, within 10 min): %s", name, exc)
