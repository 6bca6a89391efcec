"""The one generic Temporal workflow: it walks a definition tree and runs each step as an activity.

`TrellisRun` composes the parts and holds the entry points: the run, the operator's
updates (decide, pause, resume) and the live query. The path of a step is in
`step_runner.py`, containers in `containers.py`, gates in `reviews.py`, the read model's
writes in `recorder.py` and `outbox.py`.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.cel_budget import (
        TaskBudget,
        charge_results,
        charge_variables,
        share_per_task,
    )
    from temporal_workflows.clock import RunClock
    from temporal_workflows.continuation import Continuation
    from temporal_workflows.contracts import (
        CONFLICT_ERROR,
        DECIDE,
        PAUSE,
        PENDING_REQUIREMENTS,
        RESUME,
        RUN_FAILED_ERROR,
        WORKFLOW_TYPE,
        ControlRequest,
        ControlResult,
        RunInput,
        RunResult,
    )
    from temporal_workflows.definition import iter_nodes
    from temporal_workflows.dispatcher import Dispatcher
    from temporal_workflows.gate_policy import fails_run
    from temporal_workflows.gates import Decision, DecisionResult, Requirement
    from temporal_workflows.history import HistoryBudget
    from temporal_workflows.inline_slices import InlineSlices, SliceCutter
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outbox import LAST_WRITES_OUTLIVE_CANCEL_PATCH, Outbox
    from temporal_workflows.outcomes import NodeFailed, RunCancelled
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.reviews import (
        PAUSED_CANCEL_PATCH,
        PAUSED_FAIL_PATCH,
        Reviews,
        review_of,
    )
    from temporal_workflows.run_status import Activity, Pause
    from temporal_workflows.scope import Scope
    from temporal_workflows.status_attribute import StatusAttribute
    from temporal_workflows.step_runner import StepRunner


# A run paused before it started was written `running` by its start (in the store and in
# TrellisRunStatus) while it waited paused, so a resume was refused; it now starts `paused`.
PAUSED_AT_START_PATCH = "run-paused-before-its-start-starts-paused"


@workflow.defn(name=WORKFLOW_TYPE)
class TrellisRun:
    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        # Built here, not in run(): update handlers may run before run() starts.
        self._inp = inp
        self._finished = False
        self._clock = RunClock()
        self._history = HistoryBudget(inp)
        self._outbox = Outbox(
            self._clock, self._history, inp.steps_write_queued, inp.steps_write_node_runs
        )
        self._gates = OpenGates()
        self._pause = Pause(self._outbox)
        self._activity = Activity(self._gates, self._pause)
        self._status_attribute = StatusAttribute(inp.status_shown_per_task)
        self._recorder = RunRecorder(
            inp,
            self._outbox,
            self._clock,
            self._gates,
            self._pause,
            self._activity,
            self._status_attribute,
        )
        reviews = Reviews(
            inp, self._gates, self._recorder, self._pause, self._activity, self._clock
        )
        self._slices = InlineSlices()
        cutter = SliceCutter(self._slices, self._recorder.write_queued, inp.inline_steps_yield)
        steps = StepRunner(
            inp, self._recorder, reviews, self._activity, self._clock, self._history, cutter
        )
        self._continuation = Continuation(
            inp, self._history, self._outbox, self._recorder, self._gates, self._pause
        )
        self._dispatcher = Dispatcher(
            inp,
            self._recorder,
            reviews,
            steps,
            self._continuation,
            self._pause,
            self._activity,
            self._clock,
            self._history,
        )

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        scope = Scope(
            input=inp.initial_input, additional_data=inp.additional_data, session_state={}
        )
        self._outbox.start()
        self._status_attribute.start()
        if inp.expression_task_steps is not None:
            # The history's length names the workflow task (the same on replay).
            # A slice of inline steps and containers' expressions (inline_slices.py) starts a
            # share of its own.
            info, slices = workflow.info(), self._slices

            def task() -> tuple[int, int]:
                return info.get_current_history_length(), slices.cuts

            share_per_task(TaskBudget(task, inp.expression_task_steps, inp.expression_steps))
        charge_results(inp.results_charged)
        charge_variables(inp.variables_charged)
        if inp.resume is None:
            await self._recorder.publish("run_started", status=self._started_status())
        position = self._continuation.restore(scope)
        try:
            output = await self._dispatcher.run_top_level(inp.definition.nodes, scope, position)
        except NodeFailed as failed:
            await self._finish("failed", {"error_summary": str(failed)}, "run_failed")
            raise ApplicationError(str(failed), type=RUN_FAILED_ERROR, non_retryable=True) from None
        except RunCancelled as cancelled:
            await self._finish("cancelled", {"error_summary": str(cancelled)}, "run_cancelled")
            return RunResult(status="cancelled", error_summary=str(cancelled))
        except asyncio.CancelledError:
            await self._finish("cancelled", {}, "run_cancelled")
            raise
        await self._finish("completed", {"final_output": output}, "run_completed")
        return RunResult(status="completed", final_output=output)

    def _started_status(self) -> str:
        """`paused` for a run paused before it started: the pause's update is taken in the
        run's first workflow task, before the run's own code starts."""
        if self._pause.paused and workflow.patched(PAUSED_AT_START_PATCH):
            return "paused"
        return "running"

    async def _finish(self, status: str, changes: dict[str, object], event: str) -> None:
        self._finished = True
        self._gates.clear()
        self._pause.set(False, self._pause.paused_at)
        # The task that writes the end, by its history length (the same on replay): a
        # task run again after Temporal refused one that wrote an end comes later.
        order = workflow.info().get_current_history_length()
        await self._recorder.publish(
            event,
            status=status,
            changes={"finished_at": self._clock.stamp(), "end_order": order, **changes},
        )
        # Let accepted updates finish before the run returns; a cancel that comes
        # meanwhile is too late, as one that comes while the last writes go (outbox.py).
        while True:
            try:
                await workflow.wait_condition(workflow.all_handlers_finished)
                break
            except asyncio.CancelledError:
                if not workflow.patched(LAST_WRITES_OUTLIVE_CANCEL_PATCH):
                    raise
        await self._outbox.close(ending=True)
        self._recorder.settle_status()

    # -- human decisions ------------------------------------------------------

    @workflow.update(name=DECIDE)
    async def decide(self, decision: Decision) -> DecisionResult:
        """Apply a decision to an open gate; exactly once per gate."""
        req = self._gates.open[decision.step_id]
        remaining = self._gates.accept(decision)
        cancels = decision.resolution == "reject" and req.on_reject == "cancel"
        status = (
            # A rejection whose gate cancels the run ends it in this same workflow task,
            # paused or not (a run paused before PAUSED_CANCEL_PATCH waited for its resume).
            "cancelled"
            if cancels and (not self._pause.paused or workflow.patched(PAUSED_CANCEL_PATCH))
            # A rejection that fails the run: unpaused, the run fails in the next moment;
            # paused, in this workflow task too (reviews.PAUSED_FAIL_PATCH).
            else "failed"
            if self._fails_run(req, decision)
            and (not self._pause.paused or workflow.patched(PAUSED_FAIL_PATCH))
            # A paused run applies its other decisions when resumed.
            else "paused"
            if self._pause.paused
            else ("awaiting_approval" if remaining > 0 else "running")
        )
        return DecisionResult(
            run_id=self._inp.run_id,
            status=status,
            resolved_step_id=decision.step_id,
            request_fingerprint=decision.request_fingerprint,
        )

    def _fails_run(self, req: Requirement, decision: Decision) -> bool:
        """The decision fails the run (as `Reviews.open` then makes it do)."""
        if decision.resolution != "reject" or req.on_reject != "retry":
            return False
        nodes = iter_nodes(self._inp.definition.nodes)
        node = next((n for n in nodes if n.id == req.step_id), None)
        review = review_of(node) if node is not None else None
        return (
            node is not None
            and review is not None
            and fails_run(review, decision, req.retry_count, node)
        )

    @decide.validator
    def _check_decision(self, decision: Decision) -> None:
        if self._finished:
            raise ApplicationError("Run is not awaiting approval", type=CONFLICT_ERROR)
        self._gates.check(decision)

    @workflow.query(name=PENDING_REQUIREMENTS)
    def pending_requirements(self) -> list[Requirement]:
        """The open gates, live."""
        return self._gates.pending()

    # -- pause and resume -----------------------------------------------------

    @workflow.update(name=PAUSE)
    async def pause(self, request: ControlRequest) -> ControlResult:
        """Start no new node until resumed; in-flight steps finish and are recorded."""
        self._pause.set(True, self._clock.now())
        self._activity.show()
        await self._recorder.publish("run_paused", wait=True, requestedBy=request.requested_by)
        return ControlResult(run_id=self._inp.run_id, status="paused")

    @pause.validator
    def _check_pause(self, request: ControlRequest) -> None:
        if self._finished or self._pause.paused:
            raise ApplicationError(
                f"Run is {self._recorder.status}; only a running or waiting run can be paused",
                type=CONFLICT_ERROR,
            )

    @workflow.update(name=RESUME)
    async def resume(self, request: ControlRequest) -> ControlResult:
        """Continue a paused run."""
        self._pause.set(False, None)
        self._activity.show()
        await self._recorder.publish("run_resumed", wait=True, requestedBy=request.requested_by)
        return ControlResult(run_id=self._inp.run_id, status=self._activity.live_status())

    @resume.validator
    def _check_resume(self, request: ControlRequest) -> None:
        if self._finished or not self._pause.paused:
            raise ApplicationError(
                f"Run is {self._recorder.status}; only a paused run can be resumed",
                type=CONFLICT_ERROR,
            )
