"""What each container does with the nodes it holds: parallel, condition, router, loop.

Each body runs inside the node run the dispatcher records around it and returns
(input snapshot, output). Semantics: docs/semantics.md, and docs/hitl.md for the gates.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions
    from temporal_workflows.continuation import Continuation
    from temporal_workflows.contracts import LoopResume, RunInput
    from temporal_workflows.definition import HumanReview, WorkflowNode
    from temporal_workflows.gates import (
        Decision,
        Requirement,
        before_gate,
        iteration_gate,
        review_gate,
    )
    from temporal_workflows.outcomes import NodeFailed, NodeSkipped, RunStopped
    from temporal_workflows.read_model import OPEN_REV
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.reviews import Reviews, review_of
    from temporal_workflows.scope import Scope

if TYPE_CHECKING:
    from temporal_workflows.dispatcher import Dispatcher


@dataclass
class Containers:
    inp: RunInput
    dispatcher: Dispatcher
    recorder: RunRecorder
    reviews: Reviews
    continuation: Continuation

    async def parallel(self, node: WorkflowNode, scope: Scope, _: str) -> tuple[Any, Any]:
        """Every child at once (at most maxConcurrency); the first failure stops the rest."""
        limit = asyncio.Semaphore(self.inp.definition.max_concurrency)
        scopes = [scope.fork() for _ in node.children]
        stops: list[RunStopped] = []
        tasks: list[asyncio.Task[Any]] = []

        async def branch(index: int) -> Any:
            async with limit:
                if stops:
                    return None  # a sibling failed: start nothing new
                try:
                    result = await self.dispatcher.run_node(node.children[index], scopes[index])
                    # Siblings may hold the block for long: show this branch's records now.
                    self.recorder.flush_soon()
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
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
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

    async def condition(
        self, node: WorkflowNode, scope: Scope, node_run_id: str
    ) -> tuple[Any, Any]:
        """trueSteps or falseSteps by conditionCel (or falseSteps on an else_branch reject)."""
        source = node.condition_cel or ""
        decision = await self._confirm(node, node_run_id)
        if decision is not None and decision.resolution == "reject":  # else_branch
            output = await self.dispatcher.run_sequence(node.false_steps, scope)
            return {
                "conditionCel": source,
                "result": None,
                "branch": "falseSteps",
                "reason": "rejected: else_branch",
            }, output
        value = _evaluate(node, source, scope.variables())
        if not isinstance(value, bool):
            raise NodeFailed(
                node.name,
                f"conditionCel must yield a bool, got {type(value).__name__} {value!r}",
            )
        branch = "trueSteps" if value else "falseSteps"
        steps = node.true_steps if value else node.false_steps
        output = await self.dispatcher.run_sequence(steps, scope)
        return {"conditionCel": source, "result": value, "branch": branch}, output

    async def router(self, node: WorkflowNode, scope: Scope, node_run_id: str) -> tuple[Any, Any]:
        """The choices conditionCel (or a person) selects, each run in turn."""
        names = [c.name for c in node.choices]
        source = node.condition_cel or ""
        review = review_of(node)
        if review is not None and review.requires_user_input:
            selected = await self._select_route(node, review, scope, names, node_run_id)
        else:
            await self._confirm(node, node_run_id)
            selected = _route(node, source, scope, names)
        outputs: dict[str, Any] = {}
        for choice in node.choices:
            if choice.name in selected:
                outputs[choice.name] = await self.dispatcher.run_sequence(choice.steps, scope)
        output = outputs[selected[0]] if len(selected) == 1 else outputs
        if review is not None and review.requires_output_review:
            decision = await self.reviews.ask(
                node,
                review,
                lambda _: review_gate(node, review, output),
                node_run_id=lambda: node_run_id,
                rev=OPEN_REV,
            )
            if decision.resolution == "edit":
                output = decision.edited_output
        return {"conditionCel": source, "selected": selected}, output

    async def loop(self, node: WorkflowNode, scope: Scope, node_run_id: str) -> tuple[Any, Any]:
        """The children, iteration after iteration, until maxIterations or endConditionCel."""
        assert node.loop_config is not None
        await self._confirm(node, node_run_id)
        review = review_of(node)
        end = node.loop_config.end_condition_cel
        outer = {k: scope.extra.get(k) for k in ("iteration", "loop_outputs")}
        outputs: list[Any] = []
        iteration = 0
        resumed = self.continuation.resumed_loop(node_run_id)
        if resumed is not None:
            iteration, outputs = resumed.iteration, list(resumed.outputs)
        ended_by = "maxIterations"
        iteration_outputs: dict[str, Any] = {}
        last: Any = None

        async def run_iteration(_: Decision | None = None) -> None:
            nonlocal iteration_outputs, last
            scope.extra["iteration"] = iteration
            scope.extra["loop_outputs"] = outputs
            iteration_outputs, last = {}, None
            for child in node.children:
                last = await self.dispatcher.run_node(child, scope)
                iteration_outputs[child.name] = last

        def gate(_: int) -> Requirement:
            assert review is not None
            return iteration_gate(node, review, iteration, last)

        while iteration < node.loop_config.max_iterations:
            await run_iteration()
            if review is not None and review.requires_iteration_review:
                try:
                    await self.reviews.ask(
                        node,
                        review,
                        gate,
                        node_run_id=lambda: node_run_id,
                        rev=OPEN_REV,
                        redo=run_iteration,
                    )
                except NodeSkipped:
                    ended_by = "rejected"
                    break
            outputs.append(last)
            iteration += 1
            if end:
                done = _evaluate(
                    node, end, {**scope.variables(), "iteration_outputs": iteration_outputs}
                )
                if not isinstance(done, bool):
                    raise NodeFailed(node.name, f"endConditionCel must yield a bool, got {done!r}")
                if done:
                    ended_by = "endConditionCel"
                    break
            if self.continuation.is_top(node) and iteration < node.loop_config.max_iterations:
                await self.continuation.continue_if_due(
                    self.continuation.top_index,
                    scope,
                    LoopResume(node_run_id=node_run_id, iteration=iteration, outputs=outputs),
                )
        for key, value in outer.items():  # restore an enclosing loop's variables
            if value is None:
                scope.extra.pop(key, None)
            else:
                scope.extra[key] = value
        return {"iterations": len(outputs), "endedBy": ended_by}, outputs

    async def _confirm(self, node: WorkflowNode, node_run_id: str) -> Decision | None:
        """A container's requiresConfirmation gate; None when it has none."""
        review = review_of(node)
        if review is None or not review.requires_confirmation:
            return None
        return await self.reviews.ask(
            node,
            review,
            lambda _: before_gate(node, review, None),
            node_run_id=lambda: node_run_id,
            rev=OPEN_REV,
        )

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
            suggestion: list[str] | None = _route(node, node.condition_cel or "", scope, names)
        except NodeFailed:
            suggestion = None

        def requirement(_: int) -> Requirement:
            req = before_gate(node, review, names)
            req.suggested_choices = suggestion
            return req

        decision = await self.reviews.ask(
            node, review, requirement, node_run_id=lambda: node_run_id, rev=OPEN_REV
        )
        if decision.resolution == "route_select" and decision.selected_choices:
            return decision.selected_choices
        if suggestion is None:
            raise NodeFailed(
                node.name,
                "confirmed without a selection, and the "
                "router's conditionCel gave no valid suggestion",
            )
        return suggestion


def _route(node: WorkflowNode, source: str, scope: Scope, names: list[str]) -> list[str]:
    value = _evaluate(node, source, {**scope.variables(), "step_choices": names})
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
            f"router selected {unknown[0]!r}, which is not a choice (choices: {', '.join(names)})",
        )
    return selected


def _evaluate(node: WorkflowNode, source: str, variables: dict[str, Any]) -> Any:
    try:
        return expressions.evaluate(source, variables)
    except expressions.ExpressionError as exc:
        raise NodeFailed(node.name, str(exc)) from None
