"""What the sequential containers do with the nodes they hold: condition, router, loop.

Each body runs inside the node run the dispatcher records around it and returns
(input snapshot, output); when the run continued as new inside it, it carries on from
its frame. Semantics: docs/semantics.md, and docs/hitl.md for the gates.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions
    from temporal_workflows.continuation import Continuation, Suspended
    from temporal_workflows.contracts import RunInput
    from temporal_workflows.definition import HumanReview, WorkflowNode
    from temporal_workflows.frames import ConditionFrame, LoopFrame, RouterFrame, SequenceFrame
    from temporal_workflows.gates import (
        Decision,
        Requirement,
        as_saved,
        before_gate,
        iteration_gate,
        review_gate,
    )
    from temporal_workflows.inline_slices import SliceCutter
    from temporal_workflows.outcomes import NodeFailed, NodeSkipped
    from temporal_workflows.placement import Placement
    from temporal_workflows.read_model import OPEN_REV
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.reviews import Reviews, review_of
    from temporal_workflows.scope import Scope

if TYPE_CHECKING:
    from temporal_workflows.dispatcher import Dispatcher

LOOP_VARIABLES = ("iteration", "loop_outputs")
# A rejected router output review with onReject: retry only asked again, over the same
# output; it now runs the selected choices again first (new activities in the history).
ROUTER_RETRY_PATCH = "router-output-review-retry-runs-the-choices-again"
# A loop iteration run again after a rejected review did not see the reviewer's feedback.
LOOP_RETRY_PATCH = "loop-iteration-retry-sees-the-feedback"
# A router whose conditionCel gave an empty list completed, running no choice; it fails now
# (a router picks a choice), and a gate's suggestion of none is no suggestion.
EMPTY_ROUTE_PATCH = "router-selecting-no-choice-fails"
# A choice named twice by conditionCel ran once but made the output the several-choices
# map ({name: output}); it is now selected once, as if named once.
DUPLICATE_ROUTE_PATCH = "router-choice-named-twice-selected-once"
# A route selection approved by its timer with no suggestion failed the router (and the
# run); it is skipped now, as a step whose timed-out form lacks a required value is.
UNSUGGESTED_TIMEOUT_PATCH = "route-timed-out-without-suggestion-skips"
# A selected name that differs from a choice's only in Unicode form failed the router.
UNICODE_FORM_ROUTE_PATCH = "router-names-compared-in-one-unicode-form"


@dataclass
class Containers:
    inp: RunInput
    dispatcher: Dispatcher
    recorder: RunRecorder
    reviews: Reviews
    continuation: Continuation
    # Each expression a container evaluates may first wait for a new slice (inline_slices.py).
    cutter: SliceCutter

    async def condition(
        self,
        node: WorkflowNode,
        scope: Scope,
        node_run_id: str,
        frame: ConditionFrame | None,
        known: dict[str, Any],
    ) -> tuple[Any, Any]:
        """trueSteps or falseSteps by conditionCel (or falseSteps on an else_branch reject)."""
        known["conditionCel"] = node.condition_cel or ""
        if frame is not None:
            snapshot, at = frame.snapshot, frame.at
        else:
            snapshot, at = await self._choose_branch(node, scope, node_run_id), None
        known.update(snapshot)
        steps = node.true_steps if snapshot["branch"] == "trueSteps" else node.false_steps
        try:
            output = await self.dispatcher.run_sequence(steps, scope, at=at)
        except Suspended as suspended:
            suspended.frame = ConditionFrame(
                node_run_id=node_run_id, snapshot=snapshot, at=suspended.frame
            )
            raise
        return snapshot, output

    async def _choose_branch(
        self, node: WorkflowNode, scope: Scope, node_run_id: str
    ) -> dict[str, Any]:
        """The branch to run and why (the node run's input snapshot)."""
        source = node.condition_cel or ""
        decision = await self._confirm(node, node_run_id)
        if decision is not None and decision.resolution == "reject":  # else_branch
            return {
                "conditionCel": source,
                "result": None,
                "branch": "falseSteps",
                "reason": "rejected: else_branch",
            }
        await self.cutter.before_expression()
        result = _evaluate(node, source, scope.variables())
        value = result.value
        if not isinstance(value, bool):
            raise NodeFailed(node.name, result.not_yielding("conditionCel", "a bool"))
        branch = "trueSteps" if value else "falseSteps"
        return {"conditionCel": source, "result": value, "branch": branch}

    async def router(
        self,
        node: WorkflowNode,
        scope: Scope,
        node_run_id: str,
        frame: RouterFrame | None,
        known: dict[str, Any],
    ) -> tuple[Any, Any]:
        """The choices conditionCel (or a person) selects, each run in turn."""
        source = node.condition_cel or ""
        known["conditionCel"] = source
        review = review_of(node)
        if frame is not None:
            selected, outputs = frame.selected, dict(frame.outputs)
        else:
            selected, outputs = await self._select(node, review, scope, node_run_id), {}
        known["selected"] = selected
        for choice in node.choices:
            if choice.name not in selected or choice.name in outputs:
                continue
            at = frame.at if frame is not None and frame.choice == choice.name else None
            try:
                outputs[choice.name] = await self.dispatcher.run_sequence(
                    choice.steps, scope, at=at
                )
            except Suspended as suspended:
                suspended.frame = RouterFrame(
                    node_run_id=node_run_id,
                    selected=selected,
                    outputs=outputs,
                    choice=choice.name,
                    at=suspended.frame,
                )
                raise
        output = outputs[selected[0]] if len(selected) == 1 else outputs
        if review is not None and review.requires_output_review:

            async def run_again(rejected: Decision) -> None:
                nonlocal output
                if not workflow.patched(ROUTER_RETRY_PATCH):
                    return
                again: dict[str, Any] = {}
                async with self.continuation.held(), _feedback(scope, rejected):
                    for choice in node.choices:
                        if choice.name in selected:
                            again[choice.name] = await self.dispatcher.run_sequence(
                                choice.steps, scope
                            )
                output = again[selected[0]] if len(selected) == 1 else again

            decision = await self.reviews.ask(
                node,
                review,
                lambda _: review_gate(node, review, output),
                node_run_id=lambda: node_run_id,
                rev=OPEN_REV,
                redo=run_again,
            )
            if decision.resolution == "edit":
                output = decision.edited_output
        return {"conditionCel": source, "selected": selected}, output

    async def _select(
        self, node: WorkflowNode, review: HumanReview | None, scope: Scope, node_run_id: str
    ) -> list[str]:
        names = [c.name for c in node.choices]
        if review is not None and review.requires_user_input:
            return await self._select_route(node, review, scope, names, node_run_id)
        await self._confirm(node, node_run_id)
        await self.cutter.before_expression()
        return _route(node, node.condition_cel or "", scope, names)

    async def loop(
        self,
        node: WorkflowNode,
        scope: Scope,
        node_run_id: str,
        frame: LoopFrame | None,
        known: dict[str, Any],
    ) -> tuple[Any, Any]:
        """The children, iteration after iteration, until maxIterations or endConditionCel."""
        assert node.loop_config is not None
        # What a failed (or gate-skipped) loop's node run shows, as condition and router
        # show their expression: how it would end, then how far it got.
        if node.loop_config.end_condition_cel:
            known["endConditionCel"] = node.loop_config.end_condition_cel
        known["maxIterations"] = node.loop_config.max_iterations
        if frame is None:
            await self._confirm(node, node_run_id)
            outer = {k: scope.extra.get(k) for k in LOOP_VARIABLES}
            iteration, outputs, iteration_outputs, at = 0, [], {}, None
        else:
            outer, iteration, outputs = frame.outer, frame.iteration, list(frame.outputs)
            iteration_outputs, at = dict(frame.iteration_outputs), frame.at
        review = review_of(node)
        end = node.loop_config.end_condition_cel
        ended_by = "maxIterations"
        last: Any = None

        async def run_iteration(resume: SequenceFrame | None = None) -> None:
            nonlocal last
            scope.extra["iteration"] = iteration
            scope.extra["loop_outputs"] = outputs
            if resume is None:
                iteration_outputs.clear()
            # Between iterations of a top-level loop runs have always continued as new.
            top_first = self.continuation.is_top(node) and iteration > 0
            outer = scope.placement if self.inp.deep_placement else None
            with scope.placed(Placement.under(outer, node_run_id, iteration=iteration)):
                last = await self.dispatcher.run_sequence(
                    node.children, scope, at=resume, top_first=top_first, outputs=iteration_outputs
                )

        async def run_again(rejected: Decision) -> None:
            async with self.continuation.held():
                if not workflow.patched(LOOP_RETRY_PATCH):
                    await run_iteration()
                    return
                async with _feedback(scope, rejected):
                    await run_iteration()

        def gate(_: int) -> Requirement:
            assert review is not None
            return iteration_gate(node, review, iteration, last)

        known["iterations"] = len(outputs)  # completed so far
        while iteration < node.loop_config.max_iterations:
            try:
                await run_iteration(at)
            except Suspended as suspended:
                suspended.frame = LoopFrame(
                    node_run_id=node_run_id,
                    iteration=iteration,
                    outputs=outputs,
                    outer=outer,
                    iteration_outputs=iteration_outputs,
                    at=suspended.frame,
                )
                raise
            at = None
            if review is not None and review.requires_iteration_review:
                try:
                    await self.reviews.ask(
                        node,
                        review,
                        gate,
                        node_run_id=lambda: node_run_id,
                        rev=OPEN_REV,
                        redo=run_again,
                    )
                except NodeSkipped:
                    ended_by = "rejected"
                    break
            outputs.append(last)
            known["iterations"] = len(outputs)
            iteration += 1
            if end:
                await self.cutter.before_expression()
                ending = _evaluate(
                    node, end, {**scope.variables(), "iteration_outputs": iteration_outputs}
                )
                if not isinstance(ending.value, bool):
                    raise NodeFailed(node.name, ending.not_yielding("endConditionCel", "a bool"))
                if ending.value:
                    ended_by = "endConditionCel"
                    break
        for key in LOOP_VARIABLES:  # restore an enclosing loop's variables
            value = outer.get(key)
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
        await self.cutter.before_expression()
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
            if decision.is_timeout and workflow.patched(UNSUGGESTED_TIMEOUT_PATCH):
                raise NodeSkipped(
                    "timed out with no suggested route: the router's conditionCel gave no "
                    "valid suggestion to approve"
                )
            raise NodeFailed(
                node.name,
                "confirmed without a selection, and the "
                "router's conditionCel gave no valid suggestion",
            )
        return suggestion


@asynccontextmanager
async def _feedback(scope: Scope, rejected: Decision) -> AsyncIterator[None]:
    """The reviewer's feedback in scope (`rejection_feedback`) while a rejection is redone."""
    outer = scope.extra.get("rejection_feedback")
    scope.extra["rejection_feedback"] = rejected.feedback
    try:
        yield
    finally:
        if outer is None:
            scope.extra.pop("rejection_feedback", None)
        else:
            scope.extra["rejection_feedback"] = outer


def _route(node: WorkflowNode, source: str, scope: Scope, names: list[str]) -> list[str]:
    result = _evaluate(node, source, {**scope.variables(), "step_choices": names})
    value = result.value
    selected = [value] if isinstance(value, str) else value
    if not isinstance(selected, list) or not all(isinstance(v, str) for v in selected):
        wanted = "a choice name or a list of names"
        raise NodeFailed(node.name, result.not_yielding("conditionCel", wanted))
    if not selected and workflow.patched(EMPTY_ROUTE_PATCH):
        raise NodeFailed(node.name, "conditionCel selected no choice (an empty list)")
    if any(v not in names for v in selected):
        named = as_saved(selected, names)
        if named != selected and workflow.patched(UNICODE_FORM_ROUTE_PATCH):
            selected = named
    once = list(dict.fromkeys(selected))
    if len(once) < len(selected) and workflow.patched(DUPLICATE_ROUTE_PATCH):
        selected = once
    unknown = [v for v in selected if v not in names]
    if unknown:
        raise NodeFailed(
            node.name,
            f"router selected {unknown[0]!r}, which is not a choice (choices: {', '.join(names)})",
        )
    return selected


def _evaluate(node: WorkflowNode, source: str, variables: dict[str, Any]) -> expressions.Evaluation:
    try:
        return expressions.evaluation(source, variables)
    except expressions.ExpressionError as exc:
        raise NodeFailed(node.name, str(exc)) from None
