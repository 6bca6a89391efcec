"""The one generic Temporal workflow: it walks a definition tree and runs each step as an activity.

Deterministic by construction: time is `workflow.now()`, node-run ids come from
counters, CEL is pure, and the read model is written only by activities.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, FailureError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions, search_attributes
    from temporal_workflows.contracts import (
        EXECUTE_STEP,
        NOW,
        RECORD_NODE_RUN,
        RECORD_RUN,
        WORKFLOW_TYPE,
        NodeRunProjection,
        RunInput,
        RunProjection,
        RunResult,
        StepInput,
        StepOutput,
    )
    from temporal_workflows.definition import StepConfig, WorkflowNode
    from temporal_workflows.retry import attempts, failure_message, retry_policy
    from temporal_workflows.scope import Scope

# Built-ins that are pure and quick run as local activities: no task-queue round trip.
LOCAL_EXECUTORS = frozenset({"builtin:echo", "builtin:transform"})
PROJECTION_TIMEOUT = timedelta(seconds=30)
STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
# Workflow-side node-run writes outrank any write an activity attempt makes.
FINAL_REV = 1_000_000_000


class NodeFailed(Exception):
    """A node failed under policy `fail`: the run fails with this summary."""

    def __init__(self, node_name: str, error: str) -> None:
        super().__init__(f"Node '{node_name}' failed: {error}")
        self.node_name = node_name
        self.error = error


@workflow.defn(name=WORKFLOW_TYPE)
class TrellisRun:
    def __init__(self) -> None:
        self._rev = 0
        self._status = "pending"
        self._node_counts: dict[str, int] = {}
        # node_run_id -> node name, in start order (dicts keep insertion order).
        self._active: dict[str, str] = {}

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        self._inp = inp
        scope = Scope(
            input=inp.initial_input,
            additional_data=inp.additional_data,
            session_state={},
        )
        await self._set_status("running", {}, "run_started")
        try:
            output = await self._run_sequence(inp.definition.nodes, scope, top_level=True)
        except NodeFailed as failed:
            summary = str(failed)
            await self._set_status(
                "failed",
                {"finished_at": self._stamp(), "error_summary": summary},
                "run_failed",
            )
            raise ApplicationError(summary, type="RunFailed", non_retryable=True) from None
        except asyncio.CancelledError:
            await self._set_status("cancelled", {"finished_at": self._stamp()}, "run_cancelled")
            raise
        await self._set_status(
            "completed",
            {"finished_at": self._stamp(), "final_output": output},
            "run_completed",
        )
        return RunResult(status="completed", final_output=output)

    # -- tree walking ---------------------------------------------------------

    async def _run_sequence(
        self, nodes: list[WorkflowNode], scope: Scope, top_level: bool = False
    ) -> Any:
        output: Any = None
        for node in nodes:
            output = await self._run_node(node, scope)
            if top_level and node.id == self._inp.stop_after_node_id:
                break
        return output

    async def _run_node(self, node: WorkflowNode, scope: Scope) -> Any:
        if node.node_type == "step":
            return await self._run_step(node, scope)
        if node.node_type == "parallel":
            return await self._run_container(node, scope, self._parallel)
        if node.node_type == "condition":
            return await self._run_container(node, scope, self._condition)
        if node.node_type == "router":
            return await self._run_container(node, scope, self._router)
        return await self._run_container(node, scope, self._loop)

    async def _run_step(self, node: WorkflowNode, scope: Scope) -> Any:
        node_run_id = self._next_node_run_id(node)
        cached = self._inp.cached_outputs.get(node.node_id)
        if cached is not None:
            now = self._stamp()
            await self._record_node(
                node_run_id,
                node,
                "completed",
                event="node_completed",
                started_at=now,
                finished_at=now,
                output_snapshot=cached.output,
                reused_from_node_run_id=cached.source_node_run_id,
                attempt=0,
            )
            scope.record(node.name, cached.output)
            return cached.output
        config = node.step_config or StepConfig()
        try:
            rendered = expressions.render(node.config, scope.variables())
        except expressions.ExpressionError as exc:
            return await self._step_failed(node_run_id, node, config, scope, str(exc), 0)
        step = StepInput(
            run_id=self._inp.run_id,
            workflow_id=self._inp.workflow_id,
            node_run_id=node_run_id,
            node_id=node.node_id,
            node_name=node.name,
            executor_key=node.executor_key,
            a2a_pool=node.a2a_pool,
            config=rendered,
            context=scope.context(),
            max_attempts=attempts(config),
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
            await self._record_node(
                node_run_id,
                node,
                "cancelled",
                event="node_cancelled",
                finished_at=self._stamp(),
                error="cancelled",
            )
            raise asyncio.CancelledError() from None
        except asyncio.CancelledError:
            await self._record_node(
                node_run_id,
                node,
                "cancelled",
                event="node_cancelled",
                finished_at=self._stamp(),
                error="cancelled",
            )
            raise
        finally:
            self._leave(node_run_id)
        if isinstance(result.output, dict) and isinstance(node.config.get("saveAs"), str):
            scope.session_state[node.config["saveAs"]] = result.output
        scope.record(node.name, result.output)
        return result.output

    async def _execute_step(
        self, step: StepInput, config: StepConfig, node: WorkflowNode
    ) -> StepOutput:
        timeout = timedelta(seconds=config.timeout_seconds)
        if node.executor_key in LOCAL_EXECUTORS:
            return await workflow.execute_local_activity(
                EXECUTE_STEP,
                step,
                result_type=StepOutput,
                start_to_close_timeout=timeout,
                retry_policy=retry_policy(config),
                activity_id=step.node_run_id,
                summary=node.name,
            )
        return await workflow.execute_activity(
            EXECUTE_STEP,
            step,
            result_type=StepOutput,
            start_to_close_timeout=timeout,
            heartbeat_timeout=STEP_HEARTBEAT_TIMEOUT,
            retry_policy=retry_policy(config),
            activity_id=step.node_run_id,
            summary=node.name,
        )

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
        extra: dict[str, Any] = {} if attempt is None else {"attempt": attempt}
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
        scope.previous_step_outputs[node.name] = None
        return None

    async def _run_container(self, node: WorkflowNode, scope: Scope, body: Any) -> Any:
        """Record a container's node run around its body; failures name the container."""
        node_run_id = self._next_node_run_id(node)
        await self._record_node(
            node_run_id, node, "running", event="node_started", started_at=self._stamp(), attempt=1
        )
        self._enter(node_run_id, node.name)
        try:
            snapshot, output = await body(node, scope)
        except NodeFailed as failed:
            await self._record_node(
                node_run_id,
                node,
                "failed",
                event="node_failed",
                finished_at=self._stamp(),
                error=failed.error
                if failed.node_name == node.name
                else f"child '{failed.node_name}' failed: {failed.error}",
            )
            raise
        except asyncio.CancelledError:
            await self._record_node(
                node_run_id,
                node,
                "cancelled",
                event="node_cancelled",
                finished_at=self._stamp(),
                error="cancelled",
            )
            raise
        finally:
            self._leave(node_run_id)
        await self._record_node(
            node_run_id,
            node,
            "completed",
            event="node_completed",
            finished_at=self._stamp(),
            input_snapshot=snapshot,
            output_snapshot=output,
        )
        scope.record(node.name, output)
        return output

    async def _parallel(self, node: WorkflowNode, scope: Scope) -> tuple[Any, Any]:
        limit = asyncio.Semaphore(self._inp.definition.max_concurrency)
        scopes = [scope.fork() for _ in node.children]
        failures: list[NodeFailed] = []
        tasks: list[asyncio.Task[Any]] = []

        async def branch(index: int) -> Any:
            async with limit:
                if failures:
                    return None  # a sibling failed: start nothing new
                try:
                    return await self._run_node(node.children[index], scopes[index])
                except NodeFailed as failed:
                    if not failures:
                        failures.append(failed)
                        for i, task in enumerate(tasks):
                            if i != index and not task.done():
                                task.cancel()
                    raise

        tasks.extend(asyncio.create_task(branch(i)) for i in range(len(node.children)))
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        if failures:
            raise failures[0]
        output: dict[str, Any] = {}
        for child, child_scope, result in zip(node.children, scopes, results, strict=True):
            output[child.name] = result
            scope.previous_step_outputs.update(child_scope.previous_step_outputs)
        return {"children": [c.name for c in node.children]}, output

    async def _condition(self, node: WorkflowNode, scope: Scope) -> tuple[Any, Any]:
        source = node.condition_cel or ""
        value = self._evaluate(node, source, scope.variables())
        if not isinstance(value, bool):
            raise NodeFailed(
                node.name,
                f"conditionCel must yield a bool, got {type(value).__name__} {value!r}",
            )
        branch = "trueSteps" if value else "falseSteps"
        steps = node.true_steps if value else node.false_steps
        output = await self._run_sequence(steps, scope)
        return {"conditionCel": source, "result": value, "branch": branch}, output

    async def _router(self, node: WorkflowNode, scope: Scope) -> tuple[Any, Any]:
        names = [c.name for c in node.choices]
        source = node.condition_cel or ""
        value = self._evaluate(node, source, {**scope.variables(), "step_choices": names})
        selected = [value] if isinstance(value, str) else value
        if not isinstance(selected, list) or not all(isinstance(v, str) for v in selected):
            raise NodeFailed(
                node.name,
                f"conditionCel must yield a choice name or a list of names, got {value!r}",
            )
        unknown = [v for v in selected if v not in names]
        if unknown:
            raise NodeFailed(
                node.name,
                f"router selected {unknown[0]!r}, which is not a choice "
                f"(choices: {', '.join(names)})",
            )
        outputs: dict[str, Any] = {}
        for choice in node.choices:
            if choice.name in selected:
                outputs[choice.name] = await self._run_sequence(choice.steps, scope)
        output = outputs[selected[0]] if len(selected) == 1 else outputs
        return {"conditionCel": source, "selected": selected}, output

    async def _loop(self, node: WorkflowNode, scope: Scope) -> tuple[Any, Any]:
        assert node.loop_config is not None
        end = node.loop_config.end_condition_cel
        outputs: list[Any] = []
        ended_by = "maxIterations"
        for iteration in range(node.loop_config.max_iterations):
            scope.extra["iteration"] = iteration
            scope.extra["loop_outputs"] = outputs
            iteration_outputs: dict[str, Any] = {}
            last: Any = None
            for child in node.children:
                last = await self._run_node(child, scope)
                iteration_outputs[child.name] = last
            outputs.append(last)
            if end:
                done = self._evaluate(
                    node, end, {**scope.variables(), "iteration_outputs": iteration_outputs}
                )
                if not isinstance(done, bool):
                    raise NodeFailed(node.name, f"endConditionCel must yield a bool, got {done!r}")
                if done:
                    ended_by = "endConditionCel"
                    break
        for key in ("iteration", "loop_outputs"):
            scope.extra.pop(key, None)
        return {"iterations": len(outputs), "endedBy": ended_by}, outputs

    def _evaluate(self, node: WorkflowNode, source: str, variables: dict[str, Any]) -> Any:
        try:
            return expressions.evaluate(source, variables)
        except expressions.ExpressionError as exc:
            raise NodeFailed(node.name, str(exc)) from None

    # -- read model and operator view ----------------------------------------

    def _now(self) -> str:
        return workflow.now().isoformat().replace("+00:00", "Z")

    def _stamp(self) -> str:
        # Node-run times come from the recording activity's clock, like the step
        # activity's own: workflow.now() is the task's start and would sort a container
        # before the step that preceded it.
        return NOW

    def _next_node_run_id(self, node: WorkflowNode) -> str:
        count = self._node_counts.get(node.node_id, 0) + 1
        self._node_counts[node.node_id] = count
        return f"{self._inp.run_id}.{node.node_id}.{count}"

    def _enter(self, node_run_id: str, name: str) -> None:
        self._active[node_run_id] = name
        self._show_details()

    def _leave(self, node_run_id: str) -> None:
        self._active.pop(node_run_id, None)
        self._show_details()

    def _show_details(self) -> None:
        names = list(dict.fromkeys(self._active.values()))
        workflow.set_current_details(f"Running: {', '.join(names)}" if names else "")

    async def _set_status(self, status: str, changes: dict[str, Any], event: str) -> None:
        self._status = status
        self._rev += 1
        workflow.upsert_search_attributes([search_attributes.RUN_STATUS.value_set(status)])
        await workflow.execute_local_activity(
            RECORD_RUN,
            RunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                rev=self._rev,
                changes={"status": status, **changes},
                event={
                    "type": event,
                    "runId": self._inp.run_id,
                    "status": status,
                    "timestamp": self._now(),
                },
            ),
            start_to_close_timeout=PROJECTION_TIMEOUT,
        )

    async def _record_node(
        self,
        node_run_id: str,
        node: WorkflowNode,
        status: str,
        *,
        event: str | None,
        **fields: Any,
    ) -> None:
        record = {
            "id": node_run_id,
            "workflow_run_id": self._inp.run_id,
            "node_id": node.node_id,
            "node_name": node.name,
            "node_type": node.node_type,
            "status": status,
            "rev": FINAL_REV if status != "running" else FINAL_REV - 1,
            **fields,
        }
        await workflow.execute_local_activity(
            RECORD_NODE_RUN,
            NodeRunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                record=record,
                event=None
                if event is None
                else {
                    "type": event,
                    "runId": self._inp.run_id,
                    "nodeRunId": node_run_id,
                    "nodeId": node.node_id,
                    "nodeName": node.name,
                    "status": status,
                    "timestamp": self._now(),
                },
            ),
            start_to_close_timeout=PROJECTION_TIMEOUT,
        )
