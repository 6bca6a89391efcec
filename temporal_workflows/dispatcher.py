"""The interpreter's dispatcher: a sequence of nodes, one node by its type, and the node run
a container records around its body. Steps and containers do the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.clock import RunClock
    from temporal_workflows.containers import Containers
    from temporal_workflows.continuation import Continuation, Suspended
    from temporal_workflows.contracts import RunInput
    from temporal_workflows.definition import WorkflowNode
    from temporal_workflows.fanout import FanOut
    from temporal_workflows.frames import NodeFrame, SequenceFrame
    from temporal_workflows.history import HistoryBudget
    from temporal_workflows.json_data import bounded_json_size
    from temporal_workflows.outcomes import NodeFailed, NodeSkipped, RunCancelled
    from temporal_workflows.placement import Placement
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.reviews import Reviews
    from temporal_workflows.run_status import Activity, Pause
    from temporal_workflows.scope import Scope
    from temporal_workflows.step_runner import StepRunner

# A container's output over the steps' size limit fails it (`_check_output_size`).
CONTAINER_OUTPUT_LIMIT_PATCH = "container-output-within-the-step-limit"

# A container's body: runs what it holds, from its frame when the run continued as new
# inside it; returns (input snapshot, output). It fills in the last argument, its input
# snapshot so far, as it learns it: a failed node run shows what was known when it failed.
Body = Callable[[WorkflowNode, Scope, str, Any, dict[str, Any]], Awaitable[tuple[Any, Any]]]


@dataclass
class Dispatcher:
    inp: RunInput
    recorder: RunRecorder
    reviews: Reviews
    steps: StepRunner
    continuation: Continuation
    pause: Pause
    activity: Activity
    clock: RunClock
    history: HistoryBudget
    _bodies: dict[str, Body] = field(init=False)

    def __post_init__(self) -> None:
        cutter = self.steps.cutter
        containers = Containers(
            self.inp, self, self.recorder, self.reviews, self.continuation, cutter
        )
        fanout = FanOut(self.inp, self, self.recorder, self.continuation, cutter)
        self._bodies = {
            "parallel": fanout.parallel,
            "map": fanout.map,
            "condition": containers.condition,
            "router": containers.router,
            "loop": containers.loop,
        }

    async def run_top_level(
        self, nodes: list[WorkflowNode], scope: Scope, at: SequenceFrame | None
    ) -> Any:
        """The definition's top-level sequence; continues as new when a strand says so."""
        try:
            return await self.run_sequence(nodes, scope, at=at, top=True)
        except Suspended as suspended:
            await self.continuation.continue_as_new(suspended.frame, scope)
            raise AssertionError("continue_as_new returns only by raising") from None

    async def run_sequence(
        self,
        nodes: list[WorkflowNode],
        scope: Scope,
        *,
        at: SequenceFrame | None = None,
        top: bool = False,
        top_first: bool = False,
        outputs: dict[str, Any] | None = None,
    ) -> Any:
        """Nodes one after another, from `at` when resuming; the output of the last.

        `top`: the definition's top level; `top_first`: the boundary before the first
        node is one where runs have always continued as new (a top-level loop's next
        iteration). `outputs` collects each node's output by name.
        """
        output: Any = None
        start, inside = (at.index, at.inside) if at is not None else (0, None)
        for index in range(start, len(nodes)):
            node = nodes[index]
            if inside is None:
                try:
                    await self.continuation.boundary(top=top or (top_first and index == 0))
                except Suspended as suspended:
                    suspended.frame = SequenceFrame(index=index)
                    raise
            if top:
                self.continuation.at_top(node)
            try:
                output = await self.run_node(node, scope, inside)
            except Suspended as suspended:
                suspended.frame = SequenceFrame(index=index, inside=suspended.frame)
                raise
            inside = None
            if outputs is not None:
                outputs[node.name] = output
            if top and node.id == self.inp.stop_after_node_id:
                break
        return output

    async def run_node(
        self, node: WorkflowNode, scope: Scope, frame: NodeFrame | None = None
    ) -> Any:
        await self.pause.hold()
        self.history.check(node.name)
        if node.node_type == "step":
            return await self.steps.run(node, scope)
        return await self._run_container(node, scope, self._bodies[node.node_type], frame)

    async def _run_container(
        self, node: WorkflowNode, scope: Scope, body: Body, frame: NodeFrame | None
    ) -> Any:
        """Record a container's node run around its body; failures name the container."""
        if frame is not None:
            node_run_id = frame.node_run_id  # carried over continue-as-new
            self.recorder.place(node_run_id, scope.placement)
        else:
            node_run_id = self.recorder.next_node_run_id(node, scope.placement)
            self.recorder.node(
                node_run_id,
                node,
                "running",
                event="node_started",
                started_at=self.clock.stamp(),
                attempt=1,
            )
        self.activity.enter(node_run_id, node.name)
        known: dict[str, Any] = {}
        try:
            outer = scope.placement if self.inp.deep_placement else None
            with scope.placed(Placement.under(outer, node_run_id)):
                snapshot, output = await body(node, scope, node_run_id, frame, known)
            self._check_output_size(node, output)
        except NodeSkipped as skipped:
            if known:
                skipped.fields.setdefault("input_snapshot", known)
            self.recorder.skipped(node_run_id, node, skipped)
            scope.set_output(node.name, None)
            return None
        except NodeFailed as failed:
            error = (
                failed.error
                if failed.node_name == node.name
                else f"child '{failed.node_name}' failed: {failed.error}"
            )
            ended = _ended_early(known) if self.inp.container_ends_complete else None
            self.recorder.failed(node_run_id, node, error, **(ended or _snapshot_so_far(known)))
            raise
        except (asyncio.CancelledError, RunCancelled) as stopped:
            if not self.inp.container_ends_complete:
                self.recorder.cancelled(node_run_id, node)
                raise
            # A reviewer's cancel names where and why, here as on the step it stopped at.
            why = str(stopped) if isinstance(stopped, RunCancelled) else None
            self.recorder.cancelled(node_run_id, node, why, **_ended_early(known))
            raise
        finally:
            self.activity.leave(node_run_id)
        self.recorder.node(
            node_run_id,
            node,
            "completed",
            event="node_completed",
            finished_at=self.clock.stamp(),
            input_snapshot=snapshot,
            output_snapshot=output,
        )
        scope.record(node.name, output)
        return output

    def _check_output_size(self, node: WorkflowNode, output: Any) -> None:
        """A container's output within the steps' limit: a map of many large item outputs
        made one so large that recording it ran past the workflow task's 2 s (the run
        hung for good). Runs that went past it before this rule replay as they ran."""
        most = self.inp.max_output_bytes
        if most is None or bounded_json_size(output, most) <= most:
            return
        if workflow.patched(CONTAINER_OUTPUT_LIMIT_PATCH):
            raise NodeFailed(node.name, f"output is over the limit of {most} bytes of JSON")


def _snapshot_so_far(known: dict[str, Any]) -> dict[str, Any]:
    """The `input_snapshot` field of a container's node run that ended early, if any."""
    return {"input_snapshot": known} if known else {}


def _ended_early(known: dict[str, Any]) -> dict[str, Any]:
    """A failed or cancelled container's fields: what it knew, and no output (a gate's
    record left what it showed the reviewer, a loop's last iteration, as its output)."""
    return {**_snapshot_so_far(known), "output_snapshot": None}
