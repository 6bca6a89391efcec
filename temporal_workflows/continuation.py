"""Continue-as-new: where the run stands, when it starts a fresh history, and the state it
carries across (position, data, node-run counters, the audit trail).

A fresh history is started only between top-level nodes or between the iterations of a
top-level loop, where the position is one number; docs/semantics.md says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import LoopResume, ResumePoint, RunInput
    from temporal_workflows.definition import WorkflowNode
    from temporal_workflows.gates import Requirement
    from temporal_workflows.history import HistoryBudget
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outbox import Outbox
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.run_status import Pause
    from temporal_workflows.scope import Scope


@dataclass
class Continuation:
    inp: RunInput
    history: HistoryBudget
    outbox: Outbox
    recorder: RunRecorder
    gates: OpenGates
    pause: Pause
    # The top-level node running now.
    top_index: int = 0
    top_node_id: str | None = None
    # A top-level loop carried over from the previous execution, until it resumes.
    loop: LoopResume | None = None

    @property
    def start_index(self) -> int:
        """The top-level node this execution starts at."""
        return self.inp.resume.next_index if self.inp.resume else 0

    def at_top(self, index: int, node: WorkflowNode) -> None:
        self.top_index, self.top_node_id = index, node.id

    def is_top(self, node: WorkflowNode) -> bool:
        return node.id == self.top_node_id

    def resumed_loop(self, node_run_id: str) -> LoopResume | None:
        """Where a loop stood when the run continued as new (once; None otherwise)."""
        loop = self.loop
        if loop is None or loop.node_run_id != node_run_id:
            return None
        self.loop = None
        return loop

    async def continue_if_due(
        self, index: int, scope: Scope, loop: LoopResume | None = None
    ) -> None:
        """Start a fresh history for this run when the current one has grown long.

        Only with no gate open and not paused; the position, the data, node-run
        counters and the audit trail are carried in the new input.
        """
        if not self.history.should_continue_as_new():
            return
        if self.gates.open or self.pause.paused:
            return
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self.outbox.close()
        previous = self.inp.resume.generation if self.inp.resume else 0
        point = ResumePoint(
            next_index=index,
            loop=loop,
            session_state=scope.session_state,
            previous_step_content=scope.previous_step_content,
            previous_step_outputs=scope.previous_step_outputs,
            node_counts=self.recorder.node_counts,
            resolved_requirements=[r.model_dump(mode="json") for r in self.gates.resolved],
            rev=self.recorder.rev,
            generation=previous + 1,
        )
        workflow.continue_as_new(self.inp.model_copy(update={"resume": point}))

    def restore(self, scope: Scope) -> None:
        """Take over the state an earlier execution of this run carried across."""
        point = self.inp.resume
        if point is None:
            return
        self.recorder.rev = point.rev
        self.recorder.status = "running"
        self.recorder.node_counts = dict(point.node_counts)
        self.gates.resolved = [Requirement.model_validate(r) for r in point.resolved_requirements]
        self.loop = point.loop
        scope.session_state.update(point.session_state)
        scope.previous_step_content = point.previous_step_content
        scope.previous_step_outputs.update(point.previous_step_outputs)
