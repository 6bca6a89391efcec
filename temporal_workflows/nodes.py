"""What each container does (parallel, condition, router, loop) and the dispatcher over all nodes.

Semantics are documented in docs/semantics.md (and docs/hitl.md for the gates).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions
    from temporal_workflows.contracts import LoopResume
    from temporal_workflows.definition import HumanReview, WorkflowNode
    from temporal_workflows.gates import (
        Decision,
        before_gate,
        iteration_gate,
        review_gate,
    )
    from temporal_workflows.read_model import OPEN_REV
    from temporal_workflows.runtime import (
        NodeFailed,
        NodeSkipped,
        RunCancelled,
        RunStopped,
        cancel_tasks,
    )
    from temporal_workflows.scope import Scope
    from temporal_workflows.step_nodes import StepNodes, review_of

# Built-ins that are pure and quick run as local activities: no task-queue round trip.
Body = Callable[[WorkflowNode, Scope, str], Awaitable[tuple[Any, Any]]]


class NodeRunner(StepNodes):
    async def _run_sequence(
        self, nodes: list[WorkflowNode], scope: Scope, top_level: bool = False
    ) -> Any:
        output: Any = None
        start = 0
        if top_level and self._inp.resume is not None:
            start = self._inp.resume.next_index
            output = self._inp.resume.previous_step_content
        for index in range(start, len(nodes)):
            node = nodes[index]
            if top_level:
                # A fresh history is only started between top-level nodes (or between the
                # iterations of a top-level loop), where the position is one number.
                await self._continue_as_new_if_due(index, scope)
                self._top_index, self._top_node_id = index, node.id
            output = await self._run_node(node, scope)
            if top_level and node.id == self._inp.stop_after_node_id:
                break
        return output

    async def _run_node(self, node: WorkflowNode, scope: Scope) -> Any:
        await self._hold_if_paused()
        self._check_history(node)
        if node.node_type == "step":
            return await self._run_step(node, scope)
        body: Body = {
            "parallel": self._parallel,
            "condition": self._condition,
            "router": self._router,
            "loop": self._loop,
        }[node.node_type]
        return await self._run_container(node, scope, body)

    # -- steps ------------------------------------------------------------------

    async def _run_container(self, node: WorkflowNode, scope: Scope, body: Body) -> Any:
        """Record a container's node run around its body; failures name the container."""
        resumed = self._loop_resume
        if resumed is not None and node.id == self._top_node_id:
            node_run_id = resumed.node_run_id  # a loop carried over continue-as-new
        else:
            node_run_id = self._next_node_run_id(node)
            await self._record_node(
                node_run_id,
                node,
                "running",
                event="node_started",
                started_at=self._stamp(),
                attempt=1,
            )
        self._enter(node_run_id, node.name)
        try:
            snapshot, output = await body(node, scope, node_run_id)
        except NodeSkipped:
            return await self._skip_step(node, node_run_id, scope)
        except NodeFailed as failed:
            error = (
                failed.error
                if failed.node_name == node.name
                else (f"child '{failed.node_name}' failed: {failed.error}")
            )
            await self._record_node(
                node_run_id,
                node,
                "failed",
                event="node_failed",
                finished_at=self._stamp(),
                error=error,
            )
            raise
        except (asyncio.CancelledError, RunCancelled):
            await self._cancelled(node_run_id, node)
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

    async def _confirm_container(self, node: WorkflowNode, node_run_id: str) -> Decision | None:
        """A container's requiresConfirmation gate; None when it has none."""
        review = review_of(node)
        if review is None or not review.requires_confirmation:
            return None
        retry_count = 0
        while True:
            req = before_gate(node, review, None)
            req.retry_count = retry_count
            decision = await self._open_gate(req, review, node, node_run_id, OPEN_REV)
            await self._record_node(node_run_id, node, "running", event=None)
            if decision.resolution != "reject":
                return decision
            if review.on_reject == "else_branch" and decision.decided_by != "timeout":
                return decision
            if self._rejection(review, decision, retry_count, node) == "skip":
                raise NodeSkipped()
            retry_count += 1

    async def _parallel(self, node: WorkflowNode, scope: Scope, _: str) -> tuple[Any, Any]:
        limit = asyncio.Semaphore(self._inp.definition.max_concurrency)
        scopes = [scope.fork() for _ in node.children]
        stops: list[RunStopped] = []
        tasks: list[asyncio.Task[Any]] = []

        async def branch(index: int) -> Any:
            async with limit:
                if stops:
                    return None  # a sibling failed: start nothing new
                try:
                    result = await self._run_node(node.children[index], scopes[index])
                    # Siblings may hold the block for long: show this branch's records now.
                    self._request_flush()
                    return result
                except RunStopped as stop:
                    if not stops:
                        stops.append(stop)
                        for i, task in enumerate(tasks):
                            if i != index and not task.done():
                                task.cancel()
                    raise

        tasks.extend(asyncio.create_task(branch(i)) for i in range(len(node.children)))
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            await cancel_tasks(tasks)
            raise
        if stops:
            raise stops[0]
        output: dict[str, Any] = {}
        for child, child_scope, result in zip(node.children, scopes, results, strict=True):
            if isinstance(result, BaseException):
                raise result
            output[child.name] = result
            scope.previous_step_outputs.update(child_scope.previous_step_outputs)
        return {"children": [c.name for c in node.children]}, output

    async def _condition(
        self, node: WorkflowNode, scope: Scope, node_run_id: str
    ) -> tuple[Any, Any]:
        source = node.condition_cel or ""
        decision = await self._confirm_container(node, node_run_id)
        if decision is not None and decision.resolution == "reject":  # else_branch
            output = await self._run_sequence(node.false_steps, scope)
            return {
                "conditionCel": source,
                "result": None,
                "branch": "falseSteps",
                "reason": "rejected: else_branch",
            }, output
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

    async def _router(self, node: WorkflowNode, scope: Scope, node_run_id: str) -> tuple[Any, Any]:
        names = [c.name for c in node.choices]
        source = node.condition_cel or ""
        review = review_of(node)
        if review is not None and review.requires_user_input:
            selected = await self._select_route(node, review, scope, names, node_run_id)
        else:
            await self._confirm_container(node, node_run_id)
            selected = self._route(node, source, scope, names)
        outputs: dict[str, Any] = {}
        for choice in node.choices:
            if choice.name in selected:
                outputs[choice.name] = await self._run_sequence(choice.steps, scope)
        output = outputs[selected[0]] if len(selected) == 1 else outputs
        retry_count = 0
        while review is not None and review.requires_output_review:
            req = review_gate(node, review, output)
            req.retry_count = retry_count
            decision = await self._open_gate(req, review, node, node_run_id, OPEN_REV)
            await self._record_node(node_run_id, node, "running", event=None)
            if decision.resolution == "edit":
                output = decision.edited_output
            elif decision.resolution == "reject":
                if self._rejection(review, decision, retry_count, node) == "skip":
                    raise NodeSkipped()
                retry_count += 1
                continue
            break
        return {"conditionCel": source, "selected": selected}, output

    def _route(self, node: WorkflowNode, source: str, scope: Scope, names: list[str]) -> list[str]:
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
        return selected

    async def _select_route(
        self,
        node: WorkflowNode,
        review: HumanReview,
        scope: Scope,
        names: list[str],
        node_run_id: str,
    ) -> list[str]:
        """A person picks the route; the router's CEL result is offered as the suggestion."""
        try:
            suggestion: list[str] | None = self._route(node, node.condition_cel or "", scope, names)
        except NodeFailed:
            suggestion = None
        retry_count = 0
        while True:
            req = before_gate(node, review, names)
            req.suggested_choices = suggestion
            req.retry_count = retry_count
            decision = await self._open_gate(req, review, node, node_run_id, OPEN_REV)
            await self._record_node(node_run_id, node, "running", event=None)
            if decision.resolution == "route_select" and decision.selected_choices:
                return decision.selected_choices
            if decision.resolution == "confirm":
                if suggestion is None:
                    raise NodeFailed(
                        node.name,
                        "confirmed without a selection, and the "
                        "router's conditionCel gave no valid suggestion",
                    )
                return suggestion
            if self._rejection(review, decision, retry_count, node) == "skip":
                raise NodeSkipped()
            retry_count += 1

    async def _loop(self, node: WorkflowNode, scope: Scope, node_run_id: str) -> tuple[Any, Any]:
        assert node.loop_config is not None
        await self._confirm_container(node, node_run_id)
        review = review_of(node)
        end = node.loop_config.end_condition_cel
        outer = {k: scope.extra.get(k) for k in ("iteration", "loop_outputs")}
        outputs: list[Any] = []
        iteration = 0
        resumed = self._loop_resume
        if resumed is not None and resumed.node_run_id == node_run_id:
            iteration, outputs = resumed.iteration, list(resumed.outputs)
            self._loop_resume = None
        ended_by = "maxIterations"
        retry_count = 0
        while iteration < node.loop_config.max_iterations:
            scope.extra["iteration"] = iteration
            scope.extra["loop_outputs"] = outputs
            iteration_outputs: dict[str, Any] = {}
            last: Any = None
            for child in node.children:
                last = await self._run_node(child, scope)
                iteration_outputs[child.name] = last
            if review is not None and review.requires_iteration_review:
                req = iteration_gate(node, review, iteration, last)
                req.retry_count = retry_count
                decision = await self._open_gate(req, review, node, node_run_id, OPEN_REV)
                await self._record_node(node_run_id, node, "running", event=None)
                if decision.resolution == "reject":
                    if self._rejection(review, decision, retry_count, node) == "skip":
                        ended_by = "rejected"
                        break
                    retry_count += 1
                    continue  # run the same iteration again
            retry_count = 0
            outputs.append(last)
            iteration += 1
            if end:
                done = self._evaluate(
                    node, end, {**scope.variables(), "iteration_outputs": iteration_outputs}
                )
                if not isinstance(done, bool):
                    raise NodeFailed(node.name, f"endConditionCel must yield a bool, got {done!r}")
                if done:
                    ended_by = "endConditionCel"
                    break
            if node.id == self._top_node_id and iteration < node.loop_config.max_iterations:
                await self._continue_as_new_if_due(
                    self._top_index,
                    scope,
                    LoopResume(node_run_id=node_run_id, iteration=iteration, outputs=outputs),
                )
        for key, value in outer.items():  # restore an enclosing loop's variables
            if value is None:
                scope.extra.pop(key, None)
            else:
                scope.extra[key] = value
        return {"iterations": len(outputs), "endedBy": ended_by}, outputs

    def _check_history(self, node: WorkflowNode) -> None:
        """Fail clearly before Temporal's hard history limit would terminate the run."""
        length = max(workflow.info().get_current_history_length(), self._events)
        if length > self._inp.history_event_budget:
            raise NodeFailed(
                node.name,
                f"the run's history has about {length} events, near Temporal's limit of 51,200; "
                "split long loops into separate runs",
            )

    def _evaluate(self, node: WorkflowNode, source: str, variables: dict[str, Any]) -> Any:
        try:
            return expressions.evaluate(source, variables)
        except expressions.ExpressionError as exc:
            raise NodeFailed(node.name, str(exc)) from None
