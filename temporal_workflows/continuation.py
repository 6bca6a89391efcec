"""Continue-as-new anywhere: when the run starts a fresh history, and what it carries across.

At every boundary between two nodes (however deep) a strand of the run may *park* once
its history has grown long. When every running strand is parked (no gate open, not
paused), they all unwind together, each container adding its frame (`frames.py`); the
run then continues as new with its position, data, node-run counters and audit trail,
and the new execution walks down the frames to carry on where each strand stood.
docs/semantics.md ("Continue-as-new") has the rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import ResumePoint, RunInput
    from temporal_workflows.definition import WorkflowNode
    from temporal_workflows.frames import LoopFrame, ScopeState, SequenceFrame
    from temporal_workflows.gates import Requirement
    from temporal_workflows.history import HistoryBudget
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outbox import Outbox
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.run_status import Pause
    from temporal_workflows.scope import Scope

# Runs that began before continue-as-new could happen below the top level must not do
# it there on replay: the new boundaries are behind this patch.
NESTED_PATCH = "continue-as-new-anywhere"


class Suspended(Exception):
    """The run is continuing as new: unwind this strand, each level adding its frame."""

    def __init__(self, frame: Any = None) -> None:
        super().__init__("continuing as new")
        self.frame = frame


@dataclass
class Continuation:
    inp: RunInput
    history: HistoryBudget
    outbox: Outbox
    recorder: RunRecorder
    gates: OpenGates
    pause: Pause
    # Strands of the run that are running (a container waiting on its branches is not
    # one; its branches are), how many are parked, and whether they are all let go.
    strands: int = 1
    parked: int = 0
    releasing: bool = False
    # Strands re-running work for a review's retry, which must not park.
    holding: int = 0
    # The top-level node running now.
    top_node_id: str | None = None

    def at_top(self, node: WorkflowNode) -> None:
        self.top_node_id = node.id

    def is_top(self, node: WorkflowNode) -> bool:
        return node.id == self.top_node_id

    async def boundary(self, *, top: bool) -> None:
        """Between two nodes: raise Suspended when the run continues as new here.

        `top`: a boundary where runs have always been able to continue as new (between
        top-level nodes and top-level loop iterations); the others are patched in.
        """
        if not self._may_park():
            return
        if not top and not workflow.patched(NESTED_PATCH):
            return
        self.parked += 1
        if not self._all_parked():
            try:
                # Until every running strand is parked (one arriving or one finishing
                # makes it so), or parking is off (a gate opened, the run paused).
                await workflow.wait_condition(
                    lambda: self.releasing or self._all_parked() or not self._may_park()
                )
            except BaseException:
                self.parked -= 1
                raise
            if not (self.releasing or self._all_parked()):
                self.parked -= 1
                return
        self.releasing = True  # every strand unwinds now, each adding its frame
        raise Suspended()

    def _all_parked(self) -> bool:
        return self.parked >= self.strands and self._may_park()

    def _may_park(self) -> bool:
        return (
            self.holding == 0
            and not self.gates.open
            and not self.pause.paused
            and self.history.should_continue_as_new()
        )

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Run work during which this run must not continue as new (a review's retry)."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1

    def started_waiting(self) -> None:
        """This strand now waits on branches, which run as strands of their own."""
        self.strands -= 1

    def stopped_waiting(self) -> None:
        self.strands += 1

    async def continue_as_new(self, position: SequenceFrame, scope: Scope) -> None:
        """Start a fresh history at `position`, carrying the run's state across."""
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self.outbox.close()
        self.recorder.settle_status()
        previous = self.inp.resume.generation if self.inp.resume else 0
        point = ResumePoint(
            position=position,
            next_index=position.index,
            session_state=scope.session_state,
            previous_step_content=scope.previous_step_content,
            previous_step_outputs=scope.previous_step_outputs,
            extra=scope.extra,
            node_counts=self.recorder.node_counts,
            resolved_requirements=[r.model_dump(mode="json") for r in self.gates.resolved],
            rev=self.recorder.rev,
            generation=previous + 1,
        )
        carried = {"resume": point, "branch_scopes_relative": True}
        workflow.continue_as_new(self.inp.model_copy(update=carried))

    def restore(self, scope: Scope) -> SequenceFrame | None:
        """Take over what an earlier execution of this run carried; return its position."""
        point = self.inp.resume
        if point is None:
            return None
        self.recorder.rev = point.rev
        self.recorder.status = "running"
        self.recorder.node_counts = dict(point.node_counts)
        self.gates.resolved = [Requirement.model_validate(r) for r in point.resolved_requirements]
        scope.session_state.update(point.session_state)
        scope.restore(
            ScopeState(
                previous_step_content=point.previous_step_content,
                previous_step_outputs=point.previous_step_outputs,
                extra=point.extra,
            )
        )
        if point.position is not None:
            return point.position
        # Continued before frames existed: a top-level index, maybe inside a top-level loop.
        loop = point.loop
        inside = None
        if loop is not None:
            inside = LoopFrame(
                node_run_id=loop.node_run_id,
                iteration=loop.iteration,
                outputs=loop.outputs,
                at=SequenceFrame(index=0),
            )
        return SequenceFrame(index=point.next_index, inside=inside)
