"""Step nodes: one activity per attempt, the gates around a step, and failure policy.

The containers and the dispatcher build on this in `nodes.py`.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError, FailureError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions
    from temporal_workflows.contracts import (
        EXECUTE_STEP,
        PLAN_STEP,
        StepInput,
        StepOutput,
        StepPlan,
    )
    from temporal_workflows.definition import HumanReview, StepConfig, WorkflowNode
    from temporal_workflows.gates import (
        Decision,
        before_gate,
        collect_input,
        review_gate,
    )
    from temporal_workflows.outbox import ACTIVITY_EVENTS, LOCAL_ACTIVITY_EVENTS
    from temporal_workflows.read_model import BEFORE_RUN_REV, INLINE_DONE_REV, REVIEW_REV
    from temporal_workflows.retry import failure_message, retry_policy
    from temporal_workflows.runtime import (
        NodeFailed,
        NodeSkipped,
        RunCancelled,
        RunRuntime,
    )
    from temporal_workflows.scope import Scope

ECHO = "builtin:echo"
# Pure, so evaluated inside the workflow, with no activity at all (see `_inline`).
TRANSFORM = "builtin:transform"
INLINE_EXECUTORS = frozenset({ECHO, TRANSFORM})
STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
PLAN_TIMEOUT = timedelta(seconds=30)
# What `_execute` returns for a step that failed under onError=skip.
SKIPPED = object()


def review_of(node: WorkflowNode) -> HumanReview | None:
    review = node.human_review
    return review if review is not None and review.is_active() else None


class StepNodes(RunRuntime):
    async def _run_step(self, node: WorkflowNode, scope: Scope) -> Any:
        node_run_id = self._next_node_run_id(node)
        cached = self._inp.cached_outputs.get(node.node_id)
        if cached is not None:
            await self._record_node(
                node_run_id,
                node,
                "completed",
                event="node_completed",
                started_at=self._stamp(),
                finished_at=self._stamp(),
                output_snapshot=cached.output,
                reused_from_node_run_id=cached.source_node_run_id,
                attempt=0,
            )
            scope.record(node.name, cached.output)
            return cached.output
        config = node.step_config or StepConfig()
        review = review_of(node)
        extra: dict[str, Any] = {}
        if review and (review.requires_confirmation or review.requires_user_input):
            try:
                values = await self._before_step(node, review, node_run_id)
            except NodeSkipped:
                return await self._skip_step(node, node_run_id, scope)
            if values is not None:
                extra["user_input"] = values
        retry_count = 0
        while True:
            output = await self._execute(node, config, scope, node_run_id, extra)
            if output is SKIPPED:
                scope.previous_step_outputs[node.name] = None
                return None
            if review is None or not review.requires_output_review:
                break
            req = review_gate(node, review, output)
            req.retry_count = retry_count
            decision = await self._open_gate(req, review, node, node_run_id, REVIEW_REV)
            if decision.resolution == "edit":
                output = decision.edited_output
            elif decision.resolution == "reject":
                action = self._rejection(review, decision, retry_count, node)
                if action == "skip":
                    return await self._skip_step(node, node_run_id, scope)
                retry_count += 1
                extra["rejection_feedback"] = decision.feedback
                node_run_id = self._next_node_run_id(node)
                continue
            break
        if review is not None and review.requires_output_review:
            # Completion is queued before the review; record the verdict over it.
            await self._record_node(
                node_run_id, node, "completed", event=None, output_snapshot=output
            )
        if isinstance(output, dict) and isinstance(node.config.get("saveAs"), str):
            scope.session_state[node.config["saveAs"]] = output
        scope.record(node.name, output)
        return output

    async def _before_step(
        self, node: WorkflowNode, review: HumanReview, node_run_id: str
    ) -> dict[str, Any] | None:
        """The pre-execution gate of a step; returns the form values, if any."""
        retry_count = 0
        while True:
            req = before_gate(node, review, None)
            req.retry_count = retry_count
            decision = await self._open_gate(req, review, node, node_run_id, BEFORE_RUN_REV)
            if decision.resolution == "reject":
                if self._rejection(review, decision, retry_count, node) == "skip":
                    raise NodeSkipped()
                retry_count += 1
                continue
            if not review.requires_user_input:
                return None
            try:
                return collect_input(review.user_input_schema, decision.user_input or {})
            except Exception:
                raise NodeSkipped() from None  # a timeout "approve" with an incomplete form

    def _rejection(
        self, review: HumanReview, decision: Decision, retry_count: int, node: WorkflowNode
    ) -> str:
        """'skip' or 'retry' for a rejection; raises for cancel and exhausted retries."""
        policy = review.on_reject
        if decision.decided_by == "timeout":
            policy = "cancel" if review.on_timeout == "cancel" else "skip"
        if policy == "cancel":
            raise RunCancelled(f"Cancelled at '{node.name}' ({decision.decided_by} rejected)")
        if policy == "retry":
            if retry_count < review.max_retries:
                return "retry"
            config = node.step_config or StepConfig()
            if node.node_type == "step" and config.on_error == "skip":
                return "skip"
            raise NodeFailed(
                node.name,
                f"rejected by reviewer after {retry_count} retries"
                + (f": {decision.feedback}" if decision.feedback else ""),
            )
        return "skip"

    async def _skip_step(self, node: WorkflowNode, node_run_id: str, scope: Scope) -> None:
        """Record a node a reviewer (or a gate's timeout) skipped; it outputs nothing."""
        await self._record_node(
            node_run_id,
            node,
            "skipped",
            event="node_skipped",
            finished_at=self._stamp(),
            error="skipped by reviewer",
        )
        scope.previous_step_outputs[node.name] = None
        return None

    async def _execute(
        self,
        node: WorkflowNode,
        config: StepConfig,
        scope: Scope,
        node_run_id: str,
        extra: dict[str, Any],
    ) -> Any:
        variables = {**scope.variables(), **extra}
        try:
            rendered = expressions.render(node.config, variables)
        except expressions.ExpressionError as exc:
            return await self._step_failed(node_run_id, node, config, scope, str(exc), 0)
        if node.executor_key in INLINE_EXECUTORS:
            return await self._inline(node, config, scope, node_run_id, rendered, variables)
        step = StepInput(
            run_id=self._inp.run_id,
            workflow_id=self._inp.workflow_id,
            node_run_id=node_run_id,
            node_id=node.node_id,
            node_name=node.name,
            executor_key=node.executor_key,
            a2a_pool=node.a2a_pool,
            config=rendered,
            # Every variable but the outputs of all earlier steps, which would make each
            # step's payload grow with the run (Temporal refuses payloads over 2 MB).
            context={k: v for k, v in variables.items() if k != "previous_step_outputs"},
        )
        self._enter(node_run_id, node.name)
        try:
            result = await self._execute_step(step, config, node)
        except FailureError as exc:
            # Remote activities fail with ActivityError (cause inside); local ones with
            # the cause itself.
            cause = exc.cause if isinstance(exc, ActivityError) else exc
            if not isinstance(cause, CancelledError):
                return await self._step_failed(
                    node_run_id, node, config, scope, failure_message(exc), None
                )
            await self._cancelled(node_run_id, node)
            raise asyncio.CancelledError() from None
        except asyncio.CancelledError:
            await self._cancelled(node_run_id, node)
            raise
        finally:
            self._leave(node_run_id)
        self._observe(result.started_at)
        self._observe(result.finished_at)
        return result.output

    async def _inline(
        self,
        node: WorkflowNode,
        config: StepConfig,
        scope: Scope,
        node_run_id: str,
        rendered: dict[str, Any],
        variables: dict[str, Any],
    ) -> Any:
        """`builtin:echo` and `builtin:transform` are pure: evaluated right here.

        Same output as their executors in `activities/executors/builtin.py`, which still
        serve direct calls; no task-queue or local-activity round trip, no retries.
        """
        started = self._stamp()
        key = node.executor_key
        if key == ECHO:
            output: Any = {"config": rendered, "input": scope.input}
            return await self._inline_done(node, node_run_id, rendered, output, started)
        mapping = rendered.get("map")
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            error = "builtin:transform needs config.map: an object of CEL expressions"
            return await self._step_failed(node_run_id, node, config, scope, error, 1)
        try:
            output = {name: expressions.evaluate(src, variables) for name, src in mapping.items()}
        except expressions.ExpressionError as exc:
            return await self._step_failed(node_run_id, node, config, scope, str(exc), 1)
        return await self._inline_done(node, node_run_id, rendered, output, started)

    async def _inline_done(
        self,
        node: WorkflowNode,
        node_run_id: str,
        rendered: dict[str, Any],
        output: Any,
        started: str,
    ) -> Any:
        """Queue an inline step's node run, complete, with both of its events."""
        finished = self._stamp()
        await self._record_node(
            node_run_id,
            node,
            "completed",
            event=None,
            events=[
                self._node_event("node_started", node_run_id, node, "running", started),
                self._node_event("node_completed", node_run_id, node, "completed", finished),
            ],
            rev=INLINE_DONE_REV,
            attempt=1,
            started_at=started,
            finished_at=finished,
            input_snapshot=rendered,
            output_snapshot=output,
            resolved_executor={"kind": "builtin", "key": node.executor_key, "inline": True},
            error=None,
        )
        return output

    async def _execute_step(
        self, step: StepInput, config: StepConfig, node: WorkflowNode
    ) -> StepOutput:
        timeout = timedelta(seconds=config.timeout_seconds)
        # The step records its own node run; what the workflow queued is written meanwhile
        # (a local write, so it lands well before the remote step reports).
        self._request_flush()
        self._events += ACTIVITY_EVENTS
        result: StepOutput = await workflow.execute_activity(
            EXECUTE_STEP,
            step,
            result_type=StepOutput,
            start_to_close_timeout=timeout,
            heartbeat_timeout=STEP_HEARTBEAT_TIMEOUT,
            retry_policy=retry_policy(config),
            activity_id=step.node_run_id,
            summary=await self._summary(step, node),
        )
        return result

    async def _summary(self, step: StepInput, node: WorkflowNode) -> str:
        """The activity's summary: the node name, and for pools the agent picked and why."""
        if not node.a2a_pool:
            return node.name
        self._events += LOCAL_ACTIVITY_EVENTS
        plan: StepPlan = await workflow.execute_local_activity(
            PLAN_STEP, step, result_type=StepPlan, start_to_close_timeout=PLAN_TIMEOUT
        )
        chosen = plan.resolved_executor
        if not chosen:
            return node.name
        return f"{node.name} → {chosen.get('key')} ({chosen.get('reason')})"

    async def _step_failed(
        self,
        node_run_id: str,
        node: WorkflowNode,
        config: StepConfig,
        scope: Scope,
        error: str,
        attempt: int | None,
    ) -> Any:
        skip = config.on_error == "skip"
        # attempt None: an activity ran and recorded its attempts; otherwise the step failed
        # in the workflow (a template, an inline transform) and starts and ends here.
        extra: dict[str, Any] = (
            {} if attempt is None else {"attempt": attempt, "started_at": self._stamp()}
        )
        await self._record_node(
            node_run_id,
            node,
            "skipped" if skip else "failed",
            event="node_skipped" if skip else "node_failed",
            finished_at=self._stamp(),
            error=error,
            **extra,
        )
        if not skip:
            raise NodeFailed(node.name, error)
        return SKIPPED

    # -- containers -------------------------------------------------------------
