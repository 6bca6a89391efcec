"""The one generic Temporal workflow: it walks a definition tree and runs each step as an activity.

Entry points only: the run, the operator's updates (decide, pause, resume) and the
live query. Node semantics live in `nodes.py`, state and read-model writes in `runtime.py`.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import (
        CONFLICT_ERROR,
        DECIDE,
        INVALID_ERROR,
        NOT_FOUND_ERROR,
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
    from temporal_workflows.gates import (
        Decision,
        DecisionResult,
        GateError,
        Requirement,
        check_decision,
    )
    from temporal_workflows.nodes import NodeRunner
    from temporal_workflows.runtime import NodeFailed, RunCancelled
    from temporal_workflows.scope import Scope

NOT_FOUND, INVALID, CONFLICT = NOT_FOUND_ERROR, INVALID_ERROR, CONFLICT_ERROR
_GATE_ERROR_TYPES = {"not_found": NOT_FOUND, "invalid": INVALID, "conflict": CONFLICT}


@workflow.defn(name=WORKFLOW_TYPE)
class TrellisRun(NodeRunner):
    def __init__(self) -> None:
        super().__init__()
        self._finished = False

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        self._inp = inp
        scope = Scope(
            input=inp.initial_input, additional_data=inp.additional_data, session_state={}
        )
        self._flusher = asyncio.create_task(self._flush_forever())
        if inp.resume is None:
            await self._publish("run_started", status="running")
        else:
            self._restore(scope)
        try:
            output = await self._run_sequence(inp.definition.nodes, scope, top_level=True)
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

    async def _finish(self, status: str, changes: dict[str, object], event: str) -> None:
        self._finished = True
        self._gates.clear()
        self._paused = False
        await self._publish(event, status=status, changes={"finished_at": self._stamp(), **changes})
        # Let accepted updates finish before the run returns.
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._close_outbox(self._flusher)

    # -- human decisions ------------------------------------------------------

    @workflow.update(name=DECIDE)
    async def decide(self, decision: Decision) -> DecisionResult:
        """Apply a decision to an open gate; exactly once per gate."""
        # Validators of updates delivered together all run before any handler, so the
        # handler re-checks: the first to run wins, the rest are conflicts.
        if decision.step_id not in self._gates or decision.step_id in self._decisions:
            raise ApplicationError(
                f"Requirement {decision.step_id!r} was already decided", type=CONFLICT
            )
        self._decisions[decision.step_id] = decision
        remaining = len(self._gates) - len(self._decisions)
        status = "paused" if self._paused else ("awaiting_approval" if remaining > 0 else "running")
        return DecisionResult(
            run_id=self._inp.run_id, status=status, resolved_step_id=decision.step_id
        )

    @decide.validator
    def _check_decision(self, decision: Decision) -> None:
        if self._finished or not self._gates:
            raise ApplicationError("Run is not awaiting approval", type=CONFLICT)
        req = self._gates.get(decision.step_id)
        if req is None:
            if any(r.step_id == decision.step_id for r in self._resolved):
                raise ApplicationError(
                    f"Requirement {decision.step_id!r} was already decided", type=CONFLICT
                )
            raise ApplicationError(
                f"No pending requirement for step {decision.step_id!r}", type=NOT_FOUND
            )
        if decision.step_id in self._decisions:
            raise ApplicationError(
                f"Requirement {decision.step_id!r} was already decided", type=CONFLICT
            )
        try:
            check_decision(req, decision, self._schemas.get(decision.step_id, []))
        except GateError as exc:
            raise ApplicationError(exc.message, type=_GATE_ERROR_TYPES[exc.kind]) from None

    @workflow.query(name=PENDING_REQUIREMENTS)
    def pending_requirements(self) -> list[Requirement]:
        """The open gates, live."""
        return list(self._gates.values())

    # -- pause and resume -----------------------------------------------------

    @workflow.update(name=PAUSE)
    async def pause(self, request: ControlRequest) -> ControlResult:
        """Start no new node until resumed; in-flight steps finish and are recorded."""
        self._paused = True
        self._paused_at = self._now()
        self._show_details()
        await self._publish("run_paused", wait=True, requestedBy=request.requested_by)
        return ControlResult(run_id=self._inp.run_id, status="paused")

    @pause.validator
    def _check_pause(self, request: ControlRequest) -> None:
        if self._finished or self._paused:
            raise ApplicationError(
                f"Run is {self._status}; only a running or waiting run can be paused",
                type=CONFLICT,
            )

    @workflow.update(name=RESUME)
    async def resume(self, request: ControlRequest) -> ControlResult:
        """Continue a paused run."""
        self._paused = False
        self._paused_at = None
        self._show_details()
        await self._publish("run_resumed", wait=True, requestedBy=request.requested_by)
        return ControlResult(run_id=self._inp.run_id, status=self._live_status())

    @resume.validator
    def _check_resume(self, request: ControlRequest) -> None:
        if self._finished or not self._paused:
            raise ApplicationError(
                f"Run is {self._status}; only a paused run can be resumed", type=CONFLICT
            )
