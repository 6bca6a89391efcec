"""The step activity: run one step through its executor, record each attempt, classify errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities.executors.base import Executor, PermanentError, StepCall, called, called_by
from activities.handed_writes import HandedWrites
from activities.metrics import RunMetrics
from activities.projections import write_batch
from activities.run_log import about_run
from activities.secret_text import scrub_secrets
from activities.store.base import Store, StoreUnavailable
from activities.store.records import NodeRunRecord
from activities.store.while_unavailable import while_unavailable
from temporal_workflows.clock import fixed_width
from temporal_workflows.contracts import EXECUTE_STEP, PLAN_STEP, StepInput, StepOutput, StepPlan
from temporal_workflows.json_data import (
    DEFAULT_MAX_OUTPUT_BYTES,
    MAX_DATA_VALUES,
    MAX_OUTPUT_DEPTH,
    deeper_than,
    more_values_than,
)
from temporal_workflows.read_model import (
    AttemptPhase,
    NodeRunStatus,
    attempt_rev,
    node_event,
    node_record,
)
from temporal_workflows.retry import (
    ACTIVITY_PAUSED_ERROR_TYPE,
    ACTIVITY_RESET_ERROR_TYPE,
    CALLING_KEY,
    PAUSED_ERROR,
    PERMANENT_ERROR_TYPE,
    RESET_ERROR,
    WORKER_SHUTDOWN_ERROR,
    progress_in,
    start_to_close_message,
)

log = logging.getLogger("trellis.steps")
HEARTBEAT_EVERY_SECONDS = 1.0
RUNNING_AFTER_SECONDS = 0.2
# What `_cut_off_reason` says of an attempt Temporal timed out (start-to-close); the error
# written names the limit and what the attempt waited for (`_timed_out_error`).
ATTEMPT_TIMED_OUT_ERROR = "step timed out (start-to-close)"
ATTEMPT_GONE_ERROR = "Temporal ended the attempt before it finished (timed out, or the run closed)"
# Attempts an operator cut off in Temporal (`_cut_off_by_operator`).
_BY_AN_OPERATOR = (PAUSED_ERROR, RESET_ERROR)
# An attempt's last write: "running" means the attempt failed and Temporal may retry it.
_PHASES: dict[str, AttemptPhase] = {"running": "attempt_failed", "completed": "completed"}
# How much later than Temporal's start an attempt's node run may say it started (`_ran_out`).
_STARTED_LATE = timedelta(seconds=1)


def _now() -> str:
    return fixed_width(datetime.now(UTC))


def _stamp(at: datetime | None) -> str | None:
    return None if at is None else fixed_width(at)


class StepActivities:
    def __init__(
        self,
        store: Store,
        executor: Executor,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        metrics: RunMetrics | None = None,
    ) -> None:
        self._max_output_bytes = max_output_bytes
        self._store = store
        self._executor = executor
        self._metrics = metrics or RunMetrics()
        self._handed = HandedWrites()

    @activity.defn(name=EXECUTE_STEP)
    async def execute_step(self, step: StepInput) -> StepOutput:
        """Call the step's executor once (one Temporal attempt) and record the attempt."""
        # Every line logged while the step runs (executors included) names its run and node.
        with about_run(step.run_id, step.workflow_id, step.node_id):
            return await self._execute_step(step)

    async def _execute_step(self, step: StepInput) -> StepOutput:
        # Counted on from the attempts of activities this node run lost with their workers.
        attempt = step.attempts_before + activity.info().attempt
        wrote_before = await self._write_before(step)
        again = _started_again()
        earlier = await self._earlier_run(step) if attempt > 1 or again else None
        if again and earlier is not None and earlier.attempt >= attempt:
            # Temporal counts from 1 again; the node run's attempts go on (a write of an
            # earlier attempt's number is refused as older).
            attempt = earlier.attempt + 1
        if earlier is not None and (done := _completed_before(step, earlier, attempt)):
            done.wrote_before = wrote_before
            return done
        # Until the executor says more, its heartbeats name what the attempt waits for and
        # the executor it calls: what the workflow says of a last attempt timed out.
        waiting, calling = self._target(step)
        # A retry's node_started says how the attempt before it failed, where known.
        before, lost = _previous_attempt(step, earlier, attempt, waiting)
        record = _Attempt(self._store, step, attempt, previous_error=before)
        # A step that runs longer than RUNNING_AFTER_SECONDS shows as running meanwhile
        # (well within "about a second"); how it ended is written once, at the end.
        record.announce_after(RUNNING_AFTER_SECONDS)
        first: dict[str, Any] = {"waitingFor": waiting}
        if calling is not None:
            first[CALLING_KEY] = calling
        beat = _Heartbeat(first)
        call = _call(step, attempt, beat, _earlier_progress(step))
        call.a2a_tasks = self._store  # an A2A step notes the task it follows there
        if lost:
            log.warning("step %r %s; attempt %d runs", step.node_name, before, attempt)
            self._metrics.attempt_lost(self._kind_of(call))
        _describe_span(step, attempt)
        try:
            outcome = await self._timed(call, beat)
            try:
                _check_size(outcome.output, self._max_output_bytes)
            except PermanentError as exc:  # the call went through: the node run says where
                if outcome.resolved_executor is not None:
                    called(exc, outcome.resolved_executor)
                raise
        except asyncio.CancelledError:
            cut_off = _cut_off_reason(beat)
            if cut_off in _BY_AN_OPERATOR:
                await self._cut_off_by_operator(step, record, attempt, cut_off, beat, calling)
            if cut_off == ATTEMPT_TIMED_OUT_ERROR:
                cut_off = _timed_out_error(beat)
            if cut_off is not None:
                # Not the step being cancelled: the attempt is retried (or, the last one,
                # failed by the workflow), like any failed attempt, and said as one.
                # A run closed under it (its cancel) is not the step's failure: its
                # `run cancelled` says all (said at INFO, it read as the step failing).
                level = logging.DEBUG if cut_off == ATTEMPT_GONE_ERROR else logging.WARNING
                log.log(level, "step %r attempt %d failed: %s", step.node_name, attempt, cut_off)
                if cut_off != ATTEMPT_GONE_ERROR:
                    _span_failed(cut_off, timed_out=cut_off != WORKER_SHUTDOWN_ERROR)
                progress = beat.progress()
                await record.finish(
                    "running",
                    None,
                    error=cut_off,
                    resolved_executor=progress.get(CALLING_KEY) or calling,
                )
                if cut_off != WORKER_SHUTDOWN_ERROR:
                    # Temporal has ended the attempt already and drops its answer; raised
                    # as a cancel, the SDK logged it with a traceback, as unexpected.
                    raise _said(cut_off, type="AttemptCutOff") from None
            else:
                await record.finish("cancelled", "node_cancelled", error="cancelled")
            raise
        except PermanentError as exc:
            log.warning(
                "step %r attempt %d failed for good (not retried): %s",
                step.node_name,
                attempt,
                exc,
            )
            await record.finish("running", None, error=str(exc), resolved_executor=called_by(exc))
            raise _said(str(exc), type=PERMANENT_ERROR_TYPE, non_retryable=True) from None
        except Exception as exc:
            # Not an executor's own error (those are masked where they are made): kept as
            # the worker's log shows it, with the secrets the logs mask masked.
            message = scrub_secrets(str(exc) or type(exc).__name__)
            log.warning("step %r attempt %d failed: %s", step.node_name, attempt, message)
            # The attempt's error is visible at once; the workflow writes the final status.
            await record.finish("running", None, error=message, resolved_executor=called_by(exc))
            raise _said(message, type=type(exc).__name__) from None
        result = StepOutput(
            output=outcome.output,
            attempt=attempt,
            resolved_executor=outcome.resolved_executor,
            started_at=record.started_at,
            finished_at=_now(),
            wrote_before=wrote_before,
        )
        # The step writes its own end: leaving it to the workflow's outbox would flush a
        # local activity before the next step, holding that step's workflow task open.
        await record.finish(
            "completed",
            "node_completed",
            output_snapshot=outcome.output,
            resolved_executor=outcome.resolved_executor,
        )
        return result

    async def _cut_off_by_operator(
        self,
        step: StepInput,
        record: _Attempt,
        attempt: int,
        cut_off: str,
        beat: _Heartbeat,
        calling: dict[str, Any] | None,
    ) -> NoReturn:
        """End an attempt an operator paused or reset in Temporal: not the step's failure
        nor its cancel, so its node run stays running, saying so, and no final event is
        logged. Paused, Temporal holds the activity until it is unpaused, then retries it
        (a failure the pause cut off is retryable whatever the policy's attempts left);
        reset, the workflow runs the step again (this attempt's number in the failure)."""
        log.info("step %r attempt %d: %s", step.node_name, attempt, cut_off)
        progress = beat.progress()
        await record.finish(
            "running", None, error=cut_off, resolved_executor=progress.get(CALLING_KEY) or calling
        )
        if cut_off == PAUSED_ERROR:
            raise _said(cut_off, type=ACTIVITY_PAUSED_ERROR_TYPE) from None
        raise _said(cut_off, attempt, type=ACTIVITY_RESET_ERROR_TYPE, non_retryable=True) from None

    async def _write_before(self, step: StepInput) -> bool:
        """Write what the workflow handed this step (the run's queued writes) before the
        step's own. If the store fails, the workflow's outbox writes them instead."""
        handed = step.writes_before
        if handed is None:
            return False
        execution = activity.info().workflow_run_id
        # Children started together carry the same batch: one write of it per worker.
        key = None if handed.first_seq is None else (execution, handed.first_seq, handed.order)
        try:
            await self._handed.write_once(
                key, lambda: write_batch(self._store, self._metrics, handed, execution)
            )
        except Exception as exc:
            log.warning("the run's queued writes were left to the workflow: %s", exc)
            return False
        return True

    async def _earlier_run(self, step: StepInput) -> NodeRunRecord | None:
        """This node run as an earlier attempt left it in the store (None when unknown)."""
        try:
            found = await self._store.get_node_run(step.node_run_id)
        except StoreUnavailable:
            return None  # the executor runs; its key still lets a tool deduplicate
        if found is None or found.workflow_run_id != step.run_id:
            return None
        return found

    def _target(self, step: StepInput) -> tuple[str, dict[str, Any] | None]:
        """What the step's executor calls: as a timeout's error names it, and its
        `resolvedExecutor` when that is one known executor."""
        target = getattr(self._executor, "target", None)
        if target is None:
            return step.executor_key or "its executor", None
        try:
            named: tuple[str, dict[str, Any] | None] = target(_call(step, 1, _Unsent(), {}))
        except Exception:  # only a name for an error; the call reports its own problems
            return step.executor_key or "its executor", None
        return named

    async def _timed(self, call: StepCall, beat: _Heartbeat) -> Any:
        """The executor's call, its duration observed by executor kind and outcome."""
        started, outcome = time.perf_counter(), "failed"
        try:
            result = await self._with_heartbeats(call, beat)
            outcome = "completed"
            return result
        except asyncio.CancelledError:
            # A timed-out attempt failed, as the docs say; a cancelled run's or a worker
            # shutdown's was cancelled.
            cut_off = _cut_off_reason(beat)
            timed_out = cut_off not in (
                None,
                WORKER_SHUTDOWN_ERROR,
                ATTEMPT_GONE_ERROR,
                *_BY_AN_OPERATOR,
            )
            outcome = "failed" if timed_out else "cancelled"
            raise
        finally:
            self._metrics.step_attempt(self._kind_of(call), outcome, time.perf_counter() - started)

    def _kind_of(self, call: StepCall) -> str:
        kind_of = getattr(self._executor, "kind_of", None)
        return kind_of(call) if kind_of is not None else "unknown"

    async def _with_heartbeats(self, call: StepCall, beat: _Heartbeat) -> Any:
        # A background heartbeat lets Temporal deliver cancellation to any executor
        # and notice a dead worker within the heartbeat timeout. A timer, not a task:
        # nothing to create, cancel and await on every (usually short) step.
        beat.start()
        try:
            return await self._executor.execute(call)
        finally:
            beat.stop()

    @activity.defn(name=PLAN_STEP)
    async def plan_step(self, step: StepInput) -> StepPlan:
        """The agent a pool step will try first, so the Web UI can show it before it runs."""
        plan = getattr(self._executor, "plan", None)
        if plan is None:
            return StepPlan()
        try:
            resolved = await plan(_call(step, 1, _Unsent(), {}))
        except Exception:  # the step itself will report the problem
            resolved = None
        return StepPlan(resolved_executor=resolved)

    def all(self) -> list[Any]:
        return [self.execute_step, self.plan_step]


class _Attempt:
    """The node-run writes of one attempt: at most one "running", then one final write."""

    def __init__(
        self, store: Store, step: StepInput, attempt: int, previous_error: str | None = None
    ) -> None:
        self._store = store
        self._step = step
        self._attempt = attempt
        self._previous_error = previous_error
        # The workflow execution that runs it: a late attempt of one a reset replaced
        # does not write over the new one's node run (activities/store/executions.py).
        self._execution = activity.info().workflow_run_id or None
        self.started_at = _now()
        self._announced = False
        self._timer: asyncio.TimerHandle | None = None
        self._announcing: asyncio.Task[None] | None = None

    def _record(self, status: NodeRunStatus, rev: int, **fields: Any) -> dict[str, Any]:
        return node_record(
            run_id=self._step.run_id,
            node_run_id=self._step.node_run_id,
            node_id=self._step.node_id,
            node_name=self._step.node_name,
            node_type="step",
            status=status,
            rev=rev,
            attempt=self._attempt,
            started_at=self.started_at,
            input_snapshot=self._step.config,
            execution=self._execution,
            **(self._step.placement or {}),
            **fields,
        )

    def _event(self, kind: str, status: str) -> dict[str, Any]:
        extra = {}
        if kind == "node_started" and self._previous_error:
            extra["previousError"] = self._previous_error
        return node_event(
            kind,
            run_id=self._step.run_id,
            node_run_id=self._step.node_run_id,
            node_id=self._step.node_id,
            node_name=self._step.node_name,
            status=status,
            timestamp=_now(),
            attempt=self._attempt,
            **extra,
        )

    def announce_after(self, delay: float) -> None:
        """Write "running" if the attempt is still going after `delay` seconds."""

        def announce() -> None:
            self._announcing = asyncio.create_task(self._running())

        self._timer = asyncio.get_running_loop().call_later(delay, announce)

    async def _running(self) -> None:
        fields = self._record(
            "running", attempt_rev(self._attempt, "running"), finished_at=None, error=None
        )
        await self._store.merge_node_run(fields, [self._event("node_started", "running")])
        self._announced = True

    async def finish(self, status: NodeRunStatus, event: str | None, **fields: Any) -> None:
        """The attempt's last write; carries node_started too when "running" was never sent."""
        if self._timer is not None:
            self._timer.cancel()
        if self._announcing is not None:
            # Begun: let it land first, so node_started precedes the end in the log.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._announcing)
        events = [] if self._announced else [self._event("node_started", "running")]
        if event is not None:
            events.append(self._event(event, status))
        record = self._record(
            status,
            attempt_rev(self._attempt, _PHASES.get(status, "ended")),
            **{"error": None, **fields},
        )
        if status != "running":
            record["finished_at"] = _now()
        # The executor's work is done (a tool was called): failing the attempt over a
        # store outage would have Temporal run it again. Bounded by the attempt's timeout.
        await while_unavailable(
            lambda: self._store.merge_node_run(record, events), "the step's write", between=_beat
        )


def _said(message: str, *details: Any, type: str, non_retryable: bool = False) -> ApplicationError:
    """A failed attempt as Temporal hears it, logged already in one line: BENIGN, so the
    SDK does not log it again at WARNING with a traceback (a soak found those tracebacks
    were 29 % of the platform's log lines)."""
    return ApplicationError(
        message,
        *details,
        type=type,
        non_retryable=non_retryable,
        category=ApplicationErrorCategory.BENIGN,
    )


def _cut_off_reason(beat: _Heartbeat) -> str | None:
    """Why the attempt was cut off when the step itself was not cancelled: its worker's
    shutdown (a deploy), one of its timeouts, or an operator's pause or reset of its
    activity in Temporal; None when the run was cancelled, which the node run shows as
    `node_cancelled`."""
    details = activity.cancellation_details()
    if details is None:
        return WORKER_SHUTDOWN_ERROR if activity.is_worker_shutdown() else None
    if details.worker_shutdown:
        return WORKER_SHUTDOWN_ERROR
    if details.paused:  # before reset: a reset that keeps the activity paused holds it
        return PAUSED_ERROR
    if details.reset:
        return RESET_ERROR
    if details.timed_out:
        return ATTEMPT_TIMED_OUT_ERROR
    if details.not_found:
        # What a timeout looks like from the worker: Temporal timed the attempt out and
        # answers its next heartbeat "not found" (the SDK says no more, whichever timeout
        # it was: checked on temporalio 1.35) — or the run was closed (cancelled: its
        # workflow ended before the attempt heard), and the reconciler closes the node run.
        return _timed_out_by(beat) or ATTEMPT_GONE_ERROR
    return None


def _started_again() -> bool:
    """Whether Temporal scheduled this activity's first attempt again: an operator reset
    it (or unpaused it resetting its attempts) while it was not running."""
    info = activity.info()
    return info.attempt == 1 and info.current_attempt_scheduled_time > info.scheduled_time


def _timed_out_error(beat: _Heartbeat) -> str:
    """A timed-out attempt's error: its limit, and what it was waiting for."""
    timeout = activity.info().start_to_close_timeout
    if timeout is None:
        return ATTEMPT_TIMED_OUT_ERROR
    return start_to_close_message(timeout.total_seconds(), beat.progress())


def _previous_attempt(
    step: StepInput, earlier: NodeRunRecord | None, attempt: int, waiting: str
) -> tuple[str | None, bool]:
    """How attempt `attempt - 1` ended, as its node run shows it, and whether it was lost:
    its error; or, when it left none, its timeout when Temporal timed it out (start-to-close;
    `waiting`: what it waited for, were its heartbeats silent), else that it was lost (its
    worker killed, stalled or cut off from Temporal, which gave the attempt up at its
    heartbeat timeout), which this attempt says for it, as an attempt a deploy cut off says
    itself. None for a first attempt or a node run that could not be read."""
    if earlier is None or attempt <= 1:
        return None, False
    if earlier.attempt == attempt - 1 and earlier.error is not None:
        return earlier.error, False
    if earlier.status != "running":
        return None, False  # no attempt's trace: a node run the workflow ended meanwhile
    timeout = activity.info().start_to_close_timeout
    if earlier.attempt == attempt - 1 and timeout is not None and _ran_out(earlier, timeout):
        # The attempt hears of its timeout at its next heartbeat (up to a second on) and
        # writes it after its executor stops (an agent's tasks/cancel answered): a retry
        # starting sooner finds no error yet. Said from what Temporal kept of its beats, as
        # the workflow says a last attempt's.
        progress = progress_in(activity.info().heartbeat_details) or {"waitingFor": waiting}
        return start_to_close_message(timeout.total_seconds(), progress), False
    waited = _earlier_progress(step).get("waitingFor")
    lost = (
        f"attempt {attempt - 1} was lost with its worker (no word from it: killed, stalled "
        "or cut off from Temporal, which gave the attempt up)"
        + (f" while waiting for {waited}" if waited else "")
    )
    return lost, True


def _ran_out(earlier: NodeRunRecord, timeout: timedelta) -> bool:
    """Whether Temporal failed the attempt before this retry (of the same activity) once
    its whole start-to-close timeout had passed: Temporal scheduled this retry the policy's
    backoff after that failure. The node run's `startedAt` is the worker's clock, taken
    after the attempt's first reads and writes: a little after Temporal's own start."""
    info = activity.info()
    policy = info.retry_policy
    if info.attempt < 2 or policy is None or earlier.started_at is None:
        return False
    backoff = policy.initial_interval * policy.backoff_coefficient ** (info.attempt - 2)
    if policy.maximum_interval is not None:
        backoff = min(backoff, policy.maximum_interval)
    failed_at = info.current_attempt_scheduled_time - backoff
    return failed_at >= earlier.started_at + timeout - _STARTED_LATE


def _completed_before(step: StepInput, found: NodeRunRecord, attempt: int) -> StepOutput | None:
    """The result of an earlier attempt of this node run whose end is in the store.

    Its end landed, then its worker died (or could not reach Temporal) before Temporal
    recorded the completion, so Temporal runs the node run again. Calling the executor
    again would repeat the side effect and log node_completed a second time; the
    attempt answers with what the store holds instead. Read only on a repeated attempt.
    """
    if found.status != "completed" or found.attempt >= attempt:
        return None
    log.info(
        "step %r attempt %d: attempt %d already completed, answering with its result",
        step.node_name,
        attempt,
        found.attempt,
    )
    return StepOutput(
        output=found.output_snapshot,
        attempt=found.attempt,
        resolved_executor=found.resolved_executor,
        started_at=_stamp(found.started_at),
        finished_at=_stamp(found.finished_at),
    )


def _timed_out_by(beat: _Heartbeat) -> str | None:
    """The timeout Temporal ended the attempt by, told from the attempt's own clock: its
    start-to-close once it has run that long, its heartbeat timeout once it went that long
    without a heartbeat (its loop blocked: a stalled worker, an executor's blocking call),
    whichever came first; None when neither (the run closed, or the worker lost Temporal)."""
    info = activity.info()
    silence = beat.silence_over(info.heartbeat_timeout)
    ran_out = _ran_its_time()
    if silence is not None:
        began, lasted = silence
        limit = info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else 0.0
        stc = info.start_to_close_timeout
        if not ran_out or stc is None or began + limit < stc.total_seconds():
            return (
                f"step timed out (heartbeat): no heartbeat for {lasted:.0f} s"
                f" (heartbeat timeout {limit:g} s)"
            )
    return ATTEMPT_TIMED_OUT_ERROR if ran_out else None


def _ran_its_time() -> bool:
    """Whether this attempt has run its whole start-to-close timeout by now."""
    info = activity.info()
    timeout = info.start_to_close_timeout
    if timeout is None or info.started_time is None:
        return False
    return datetime.now(UTC) - info.started_time >= timeout


def _beat() -> None:
    with contextlib.suppress(RuntimeError):  # outside an activity (tests)
        activity.heartbeat()


def _describe_span(step: StepInput, attempt: int) -> None:
    """Name the run and node on the attempt's span (Temporal's `RunActivity`, when tracing)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(
            {
                "trellis.run_id": step.run_id,
                "trellis.workflow_id": step.workflow_id,
                "trellis.node_id": step.node_id,
                "trellis.node_run_id": step.node_run_id,
                "trellis.attempt": attempt,
            }
        )


def _span_failed(why: str, *, timed_out: bool) -> None:
    """Mark the attempt's span failed: Temporal's interceptor marks a raised error, not
    an attempt cut off by its timeout or its worker's shutdown."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("error.type", "timeout" if timed_out else "worker_shutdown")
        span.set_status(Status(StatusCode.ERROR, why))


def _call(
    step: StepInput, attempt: int, beat: _Heartbeat | _Unsent, earlier_progress: dict[str, Any]
) -> StepCall:
    return StepCall(
        run_id=step.run_id,
        workflow_id=step.workflow_id,
        node_id=step.node_id,
        node_name=step.node_name,
        node_run_id=step.node_run_id,
        executor_key=step.executor_key,
        a2a_pool=step.a2a_pool,
        config=step.config,
        context=step.context,
        attempt=attempt,
        heartbeat=beat.send,
        triggered_by=step.triggered_by,
        earlier_progress=earlier_progress,
        deadline=_deadline(),
    )


def _deadline() -> float | None:
    """When Temporal times this attempt out, in seconds since the epoch."""
    try:
        info = activity.info()
    except RuntimeError:  # outside an activity (tests)
        return None
    if info.start_to_close_timeout is None or info.started_time is None:
        return None
    return (info.started_time + info.start_to_close_timeout).timestamp()


class _Unsent:
    """The heartbeat of a call that is only described, never run (a plan, a name)."""

    def send(self, *details: Any) -> None:
        pass


def _earlier_progress(step: StepInput) -> dict[str, Any]:
    """What an earlier attempt sent with its last heartbeat: this activity's own (Temporal
    keeps them across its attempts), else those of the activity lost before it."""
    return progress_in(activity.info().heartbeat_details) or step.earlier_progress or {}


class _Heartbeat:
    """Heartbeats every HEARTBEAT_EVERY_SECONDS from a timer, from start until stopped.

    Not at once: a step that ends within the first interval never pays for a heartbeat.
    The timer's callback runs in the activity's context (call_later copies it). Each beat
    carries the details the executor last sent (`send`): Temporal keeps only the latest
    heartbeat's, and an empty beat would erase what a next attempt is to pick up.
    """

    def __init__(self, *details: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._details: tuple[Any, ...] = details
        self._first = details
        self._handle: asyncio.TimerHandle | None = None
        # When the attempt began and last heartbeated, and its latest silence long enough to
        # have missed a beat (when it began, and how long it lasted): the only one that tells.
        self._began = self._last = self._loop.time()
        self._silence: tuple[float, float] | None = None

    def start(self) -> None:
        self._handle = self._loop.call_later(HEARTBEAT_EVERY_SECONDS, self._beat)

    def send(self, *details: Any) -> None:
        self._details = details = self._named(details)
        self._sent()
        activity.heartbeat(*details)

    def _named(self, details: tuple[Any, ...]) -> tuple[Any, ...]:
        """An executor's progress still says what the attempt waits for (its own
        `waitingFor` when it has one, else the activity's first)."""
        first = progress_in(self._first)
        if first is None or not details or not isinstance(details[0], dict):
            return details
        return ({**first, **details[0]}, *details[1:])

    def progress(self) -> dict[str, Any]:
        """What the last beat carried (or the next will), as a dict."""
        return progress_in(self._details) or {}

    def _beat(self) -> None:
        self._sent()
        activity.heartbeat(*self._details)
        self._handle = self._loop.call_later(HEARTBEAT_EVERY_SECONDS, self._beat)

    def _sent(self) -> None:
        now = self._loop.time()
        if now - self._last > 2 * HEARTBEAT_EVERY_SECONDS:  # a beat missed: the loop blocked
            self._silence = (self._last - self._began, now - self._last)
        self._last = now

    def silence_over(self, timeout: timedelta | None) -> tuple[float, float] | None:
        """The attempt's latest silence (seconds after its start it began, and how long it
        lasted), when Temporal would have timed it out: no heartbeat for `timeout`, less the
        second a heartbeat may take to reach Temporal (the worker sends them at most once a
        second); the one going on counts up to now."""
        if timeout is None:
            return None
        now = self._loop.time()
        current = (self._last - self._began, now - self._last)
        # Only the silence going on, or the latest one when it ended within a timeout's
        # length (Temporal answers the heartbeats after it "not found", the first within a
        # second or two): an older one, which Temporal did not time out, is past.
        limit = timeout.total_seconds()
        last = [self._silence] if self._silence is not None else []
        recent = [g for g in last if (now - self._began) - (g[0] + g[1]) <= limit]
        enough = limit - HEARTBEAT_EVERY_SECONDS
        return next((g for g in [current, *recent] if g[1] >= enough), None)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


def _check_size(output: Any, limit: int) -> None:
    if deeper_than(output, MAX_OUTPUT_DEPTH):
        # Deeper, the workflow could not decode the step's result: the run hung.
        raise PermanentError(f"step output nests deeper than {MAX_OUTPUT_DEPTH} levels")
    if more_values_than(output, MAX_DATA_VALUES):
        # More, the workflow task decoding the step's result ran past Temporal's 2 s.
        raise PermanentError(f"step output holds more than {MAX_DATA_VALUES} JSON values")
    size = len(json.dumps(output, default=str))
    if size > limit:
        raise PermanentError(f"step output is {size} bytes; the limit is {limit} bytes")
