"""One step node, top to bottom: cached output, the gate before it, its execution (inline
or one activity for all attempts), the review of its output, and how it ends.

Semantics: docs/semantics.md (steps, retries, onError) and docs/hitl.md (gates).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError, FailureError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions
    from temporal_workflows.builtins import PURE_BUILTINS, BuiltinError, run_pure
    from temporal_workflows.clock import RunClock
    from temporal_workflows.contracts import (
        EXECUTE_STEP,
        PLAN_STEP,
        RunInput,
        StepInput,
        StepOutput,
        StepPlan,
    )
    from temporal_workflows.definition import HumanReview, StepConfig, WorkflowNode
    from temporal_workflows.gates import Decision, before_gate, collect_input, review_gate
    from temporal_workflows.history import ACTIVITY_EVENTS, LOCAL_ACTIVITY_EVENTS, HistoryBudget
    from temporal_workflows.inline_slices import SliceCutter
    from temporal_workflows.json_data import deeper_than, more_values_than
    from temporal_workflows.outcomes import NodeFailed, NodeSkipped
    from temporal_workflows.read_model import BEFORE_RUN_REV, INLINE_DONE_REV, REVIEW_REV
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.retry import (
        LOST_WORKER_RERUNS,
        RERUN_POLICY,
        attempts,
        failure_message,
        last_progress,
        lost_with_its_worker,
        reset_attempt,
        retry_policy,
        start_to_close_timeout,
        timed_out_error,
    )
    from temporal_workflows.reviews import Reviews, review_of
    from temporal_workflows.run_status import Activity
    from temporal_workflows.scope import Scope
    from temporal_workflows.step_inputs import StepInputs

# A worker that dies is noticed by its step's missing heartbeats (sent every second): at
# the latest after this long, and after a third of the step's own timeout when that is
# shorter, so it is noticed before the step times out and the attempt runs again instead
# of the timeout failing the step. Not under the floor: a worker's busy second is not death.
STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
MIN_STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=5)


def heartbeat_timeout(step_timeout: timedelta) -> timedelta:
    return max(MIN_STEP_HEARTBEAT_TIMEOUT, min(STEP_HEARTBEAT_TIMEOUT, step_timeout / 3))


# Runs that lost a step's last attempt with its worker before reruns existed failed the
# step there; on replay they still do (the rerun is a new command).
LOST_WORKER_PATCH = "step-rerun-when-its-worker-is-lost"
# A last attempt Temporal timed out failed the step saying only "step timed out
# (start-to-close)", its node run naming no executor; on replay such runs still do.
TIMEOUT_DETAILS_PATCH = "step-timeout-details"
# A step whose activity an operator reset in Temporal while it ran failed there (its
# attempt cut off, then failed as the policy's last); on replay such runs still do.
ACTIVITY_RESET_PATCH = "step-reset-in-temporal-runs-again"
_GROWING_VARIABLES = frozenset({"previous_step_outputs", "loop_outputs"})
PLAN_TIMEOUT = timedelta(seconds=30)


def executor_context(variables: dict[str, Any]) -> dict[str, Any]:
    """The run context handed to a step's executor: every variable but the outputs of all
    earlier steps and iterations, which would make each step's payload (and the history)
    grow with the run."""
    return {k: v for k, v in variables.items() if k not in _GROWING_VARIABLES}


@dataclass
class _Step:
    """One step node being run: the node run it is on and what its templates see."""

    node: WorkflowNode
    scope: Scope
    config: StepConfig
    node_run_id: str
    # Variables a gate added: the form's values, a reviewer's feedback on a retry.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepRunner:
    inp: RunInput
    recorder: RunRecorder
    reviews: Reviews
    activity: Activity
    clock: RunClock
    history: HistoryBudget
    cutter: SliceCutter
    # The bytes of the step inputs in flight (the run's one budget for them).
    inputs: StepInputs = field(init=False)

    def __post_init__(self) -> None:
        self.inputs = StepInputs(self.inp.step_input_bytes, self.inp.payload_offload_bytes)

    async def run(self, node: WorkflowNode, scope: Scope) -> Any:
        """Run a step node; its output, or None when it was skipped."""
        step = _Step(
            node=node,
            scope=scope,
            config=node.step_config or StepConfig(),
            node_run_id=self.recorder.next_node_run_id(node, scope.placement),
        )
        cached = self.inp.cached_outputs.get(node.node_id)
        if cached is not None:
            self.recorder.node(
                step.node_run_id,
                node,
                "completed",
                event="node_completed",
                started_at=self.clock.stamp(),
                finished_at=self.clock.stamp(),
                output_snapshot=cached.output,
                reused_from_node_run_id=cached.source_node_run_id,
                attempt=0,
            )
            scope.record(node.name, cached.output)
            return cached.output
        try:
            output = await self._run(step, review_of(node))
        except NodeSkipped as skipped:
            self.recorder.skipped(step.node_run_id, node, skipped)
            scope.set_output(node.name, None)
            return None
        if isinstance(output, dict) and isinstance(node.config.get("saveAs"), str):
            scope.session_state[node.config["saveAs"]] = output
        scope.record(node.name, output)
        return output

    async def _run(self, step: _Step, review: HumanReview | None) -> Any:
        node = step.node
        if review and (review.requires_confirmation or review.requires_user_input):
            decision = await self.reviews.ask(
                node,
                review,
                lambda _: before_gate(node, review, None),
                node_run_id=lambda: step.node_run_id,
                rev=BEFORE_RUN_REV,
            )
            if review.requires_user_input:
                step.extra["user_input"] = _form_values(review, decision)
        output = await self._execute(step)
        if review is None or not review.requires_output_review:
            return output

        async def run_again(rejected: Decision) -> None:
            nonlocal output
            step.extra["rejection_feedback"] = rejected.feedback
            step.node_run_id = self.recorder.next_node_run_id(node, step.scope.placement)
            output = await self._execute(step)

        decision = await self.reviews.ask(
            node,
            review,
            lambda _: review_gate(node, review, output),
            node_run_id=lambda: step.node_run_id,
            rev=REVIEW_REV,
            redo=run_again,
        )
        if decision.resolution == "edit":
            output = decision.edited_output
        # Completion is queued before the review; record the verdict over it. Its
        # `node_completed` again (record content, no command): after the review's
        # node_awaiting_approval, a live stream showed the step awaiting approval for good.
        self.recorder.node(
            step.node_run_id, node, "completed", event="node_completed", output_snapshot=output
        )
        return output

    async def _execute(self, step: _Step) -> Any:
        """One execution of the step: evaluated inline, or one activity for all attempts."""
        node = step.node
        inline = node.executor_key in PURE_BUILTINS
        if inline and self.inp.inline_steps_yield:
            await self.cutter.before_inline_step()
        variables = {**step.scope.variables(), **step.extra}
        try:
            rendered = expressions.render(
                node.config, variables, keep_unicode=self.inp.templates_keep_unicode
            )
        except expressions.ExpressionError as exc:
            self._failed(step, str(exc), attempt=1)
        if inline:
            output, size = self._inline(step, rendered, variables)
            if self.inp.inline_steps_yield:
                self.cutter.slices.count(size)
                await self.recorder.write_backlog()
            return output
        request = StepInput(
            run_id=self.inp.run_id,
            workflow_id=self.inp.workflow_id,
            node_run_id=step.node_run_id,
            node_id=node.node_id,
            node_name=node.name,
            executor_key=node.executor_key,
            a2a_pool=node.a2a_pool,
            config=rendered,
            context=executor_context(variables),
            triggered_by=self.inp.triggered_by,
            placement=self.recorder.placement_of(step.node_run_id),
        )
        self.activity.enter(step.node_run_id, node.name)
        try:
            result = await self._call(request, step.config, node)
        except FailureError as exc:
            # Remote activities fail with ActivityError (cause inside); local ones with
            # the cause itself.
            cause = exc.cause if isinstance(exc, ActivityError) else exc
            if not isinstance(cause, CancelledError):
                self._failed(step, *_last_failure(exc, step.config), attempt=None)
            self.recorder.cancelled(step.node_run_id, node)
            raise asyncio.CancelledError() from None
        except asyncio.CancelledError:
            self.recorder.cancelled(step.node_run_id, node)
            raise
        finally:
            self.activity.leave(step.node_run_id)
        self.cutter.slices.restart()
        self.clock.observe(result.started_at)
        self.clock.observe(result.finished_at)
        return result.output

    def _inline(
        self, step: _Step, rendered: dict[str, Any], variables: dict[str, Any]
    ) -> tuple[Any, int]:
        """A pure built-in, evaluated right here: no activity, no retries, one record.
        Returns its output and the output's size as JSON (0 when runs had no size limit)."""
        node, node_run_id = step.node, step.node_run_id
        started = self.clock.stamp()
        key = node.executor_key or ""
        try:
            output = run_pure(key, rendered, variables)
        except BuiltinError as exc:
            self._failed(step, str(exc), attempt=1)
        limit = self.inp.max_output_depth
        if limit is not None and deeper_than(output, limit):
            # Deeper, it could not be decoded from the outbox's payload: the run hung.
            self._failed(step, f"step output nests deeper than {limit} levels", attempt=1)
        values = self.inp.max_output_values
        if values is not None and more_values_than(output, values):
            # More, recording it (and any task decoding it) could outlast Temporal's 2 s.
            self._failed(step, f"step output holds more than {values} JSON values", attempt=1)
        most, size = self.inp.max_output_bytes, 0
        if most is not None and (size := len(json.dumps(output, default=str))) > most:
            self._failed(step, f"step output is {size} bytes; the limit is {most} bytes", attempt=1)
        finished = self.clock.stamp()
        self.recorder.node(
            node_run_id,
            node,
            "completed",
            event=None,
            events=[
                self.recorder.node_event(
                    "node_started", step.node_run_id, node, "running", started, attempt=1
                ),
                self.recorder.node_event(
                    "node_completed", step.node_run_id, node, "completed", finished, attempt=1
                ),
            ],
            rev=INLINE_DONE_REV,
            attempt=1,
            started_at=started,
            finished_at=finished,
            input_snapshot=rendered,
            output_snapshot=output,
            resolved_executor={"kind": "builtin", "key": key, "inline": True},
            error=None,
        )
        return output, size

    async def _call(self, request: StepInput, config: StepConfig, node: WorkflowNode) -> StepOutput:
        """The step's activity: Temporal retries it per stepConfig."""
        timeout = timedelta(seconds=config.timeout_seconds)
        # The activity writes its own node run; what the workflow queued it writes first,
        # or (too much, or not run writes only) it is written meanwhile by the outbox (a
        # local write, so it lands well before the remote step reports).
        handed = self.recorder.hand_off()
        if handed is None:
            self.recorder.flush_soon()
            # A step starting beside one that has not yet written what it was handed (the
            # children of a run's first parallel node) writes it too, or its own
            # node_started could land before the run_started it follows. Each lands once.
            handed = self.recorder.handed_unconfirmed()
        request.writes_before = handed
        summary = await self._summary(request, node)
        policy, activity_id, reruns, resets = retry_policy(config), request.node_run_id, 0, 0
        # Its input's bytes, held until its activity ends (a wide fan-out waits its turn).
        async with self.inputs.held(request, summary, self.recorder.flush_soon):
            while True:
                self.history.add(ACTIVITY_EVENTS)
                try:
                    result: StepOutput = await workflow.execute_activity(
                        EXECUTE_STEP,
                        request,
                        result_type=StepOutput,
                        start_to_close_timeout=timeout,
                        heartbeat_timeout=heartbeat_timeout(timeout),
                        retry_policy=policy,
                        activity_id=activity_id,
                        summary=summary,
                    )
                    break
                except ActivityError as exc:
                    # An operator reset the activity: as Temporal means it, the step runs
                    # again with the policy's attempts all left, its attempts numbered on.
                    reset = reset_attempt(exc)
                    if reset is not None and workflow.patched(ACTIVITY_RESET_PATCH):
                        resets += 1
                        request.attempts_before = reset
                        policy = retry_policy(config)
                        activity_id = f"{request.node_run_id}.reset{resets}"
                        continue
                    # A deploy or a crash took the last attempt the policy allowed: run it
                    # again (the same node run and idempotency key), rather than fail it.
                    if not lost_with_its_worker(exc) or reruns == LOST_WORKER_RERUNS:
                        raise
                    if not workflow.patched(LOST_WORKER_PATCH):
                        raise
                    reruns += 1
                    # The attempts the policy had (one, a rerun's) were all used.
                    request.attempts_before += 1 if policy is RERUN_POLICY else attempts(config)
                    request.earlier_progress = last_progress(exc) or request.earlier_progress
                    policy, activity_id = RERUN_POLICY, f"{request.node_run_id}.rerun{reruns}"
        if handed is not None and result.wrote_before:
            self.recorder.handed_written(handed)
        return result

    async def _summary(self, request: StepInput, node: WorkflowNode) -> str:
        """The activity's summary: the node name, and for pools the agent picked and why."""
        if not node.a2a_pool:
            return node.name
        self.history.add(LOCAL_ACTIVITY_EVENTS)
        plan: StepPlan = await workflow.execute_local_activity(
            PLAN_STEP, request, result_type=StepPlan, start_to_close_timeout=PLAN_TIMEOUT
        )
        chosen = plan.resolved_executor
        if not chosen:
            return node.name
        return f"{node.name} → {chosen.get('key')} ({chosen.get('reason')})"

    def _failed(
        self,
        step: _Step,
        error: str,
        resolved: dict[str, Any] | None = None,
        *,
        attempt: int | None,
    ) -> NoReturn:
        """The step's last attempt failed: skip it (onError=skip) or fail the run.

        attempt None: an activity ran and recorded its attempts; otherwise the step
        failed in the workflow (a template, an inline built-in) and starts and ends here.
        resolved: the executor the attempt called, when the workflow knows it and the
        attempt could not write it (timed out).
        """
        fields: dict[str, Any] = (
            {} if attempt is None else {"attempt": attempt, "started_at": self.clock.stamp()}
        )
        if resolved is not None:
            fields["resolved_executor"] = resolved
        if step.config.on_error == "skip":
            raise NodeSkipped(error, **fields)
        self.recorder.failed(step.node_run_id, step.node, error, **fields)
        raise NodeFailed(step.node.name, error)


def _last_failure(error: FailureError, config: StepConfig) -> tuple[str, dict[str, Any] | None]:
    """The error of the step's last attempt, and the executor it called when only the
    workflow can say so: Temporal timed the attempt out, and the attempt's own write of
    it lands after the workflow's and is refused as older."""
    timeout = start_to_close_timeout(error)
    if timeout is None or not workflow.patched(TIMEOUT_DETAILS_PATCH):
        return failure_message(error), None
    return timed_out_error(timeout, config.timeout_seconds)


def _form_values(review: HumanReview, decision: Decision) -> dict[str, Any]:
    """The form's values; a timeout's "approve" with an incomplete form skips the step."""
    try:
        return collect_input(review.user_input_schema, decision.user_input or {})
    except Exception as incomplete:
        raise NodeSkipped(f"timed out with an incomplete form: {incomplete}") from None
