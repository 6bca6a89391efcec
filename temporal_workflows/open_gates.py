"""The gates a run holds open, the decisions that arrived for them, and the audit trail.

The decide update's validator and handler act here; `reviews.py` opens the gates and
waits on them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import (
        CONFLICT_ERROR,
        GATE_NOT_OPEN,
        INVALID_ERROR,
        NOT_FOUND_ERROR,
        PROBLEMS,
    )
    from temporal_workflows.definition import UserInputField
    from temporal_workflows.gate_arrival import opened_after, opened_after_arrival
    from temporal_workflows.gate_policy import resolved, timeout_decision
    from temporal_workflows.gates import Decision, GateError, Requirement, check_decision

_ERROR_TYPES = {"not_found": NOT_FOUND_ERROR, "invalid": INVALID_ERROR, "conflict": CONFLICT_ERROR}


class OpenGates:
    def __init__(self) -> None:
        # Open gates by step id, their form schemas, the decisions not yet taken up.
        self.open: dict[str, Requirement] = {}
        self._schemas: dict[str, list[UserInputField]] = {}
        self._decisions: dict[str, Decision] = {}
        # How many wait at each gate: one, but a map saved before the rule that a gate in a
        # map needs maxConcurrency 1 has its items wait at one gate at once.
        self._waiting: dict[str, int] = {}
        # Every decided gate, in order (it also tells a late decision it is too late).
        self.resolved: list[Requirement] = []

    def pending(self) -> list[Requirement]:
        return list(self.open.values())

    def waiting_names(self) -> list[str]:
        return [r.step_name or r.step_id for r in self.open.values()]

    def add(self, req: Requirement, schema: list[UserInputField]) -> None:
        self.open[req.step_id] = req
        self._schemas[req.step_id] = schema

    async def wait(self, req: Requirement, timeout_seconds: float | None) -> Decision:
        """The decision for an open gate, or its timer's; the gate is then closed."""
        step_id = req.step_id
        self._waiting[step_id] = self._waiting.get(step_id, 0) + 1
        try:
            if timeout_seconds:
                await workflow.wait_condition(
                    lambda: step_id in self._decisions, timeout=timedelta(seconds=timeout_seconds)
                )
            else:
                await workflow.wait_condition(lambda: step_id in self._decisions)
        except TimeoutError:
            # This waiter's own deadline: its decision alone (shared, it decided the other
            # items waiting at the gate before their deadlines). A decision that came with
            # the timer loses to it, as it always did.
            self._leave(step_id, taken=step_id in self._decisions)
            return timeout_decision(req)
        except asyncio.CancelledError:
            self._leave(step_id, taken=False)
            raise
        # Items waiting at one gate at once (see `_waiting`) cannot be told apart by a
        # decision's step id: the one decision is each one's, and goes with the last.
        # (The first took it away, and the others failed every task: the run was stuck.)
        decision = self._decisions[step_id]
        self._leave(step_id)
        return decision

    def _leave(self, step_id: str, taken: bool = True) -> None:
        """One waiter is done with the gate; the last one closes it (and takes its
        decision away, when one was `taken`)."""
        self._waiting[step_id] -= 1
        if self._waiting[step_id]:
            return
        del self._waiting[step_id]
        if taken:
            del self._decisions[step_id]
        self.open.pop(step_id, None)
        self._schemas.pop(step_id, None)

    def record(
        self, req: Requirement, decision: Decision, now: str, schema: list[UserInputField] | None
    ) -> None:
        """Add a decided gate to the audit trail (`schema`: a form's, to record the values
        used; None records `userInput` as sent)."""
        self.resolved.append(resolved(req, decision, now, schema))

    def check(self, decision: Decision) -> None:
        """The decide validator: refuse what the gate cannot take (nothing reaches history)."""
        timed_out = self._timed_out(decision.step_id)
        if timed_out is not None and decision.step_id not in self.open:
            # Its timer and this decision reached the run together, the timer first (it
            # was answered "not awaiting approval", not what the docs say).
            raise _timed_out(decision, timed_out)
        if not self.open:
            # A decision that lost to another on this gate says so (it read as if the gate
            # had never been); still GATE_NOT_OPEN, for a gate shown open again (a retry).
            decided = next(
                (r for r in reversed(self.resolved) if r.step_id == decision.step_id), None
            )
            said = (
                "" if decided is None else f": requirement {decision.step_id!r} was already decided"
            )
            raise ApplicationError(
                f"Run is not awaiting approval{said}", GATE_NOT_OPEN, type=CONFLICT_ERROR
            )
        req = self.open.get(decision.step_id)
        if req is None:
            if any(r.step_id == decision.step_id for r in self.resolved):
                raise _already_decided(decision)
            raise ApplicationError(
                f"No pending requirement for step {decision.step_id!r}",
                GATE_NOT_OPEN,
                type=NOT_FOUND_ERROR,
            )
        if decision.step_id in self._decisions:
            raise _already_decided(decision)
        seen = decision.seen_gate
        if seen is not None and req.key is not None and seen != req.key:
            raise _already_decided(decision)  # the gate it saw; this one opened since
        if decision.seen_kind is not None and decision.seen_kind != req.kind:
            raise _already_decided(decision)  # its confirmation; the output review since
        if opened_after(req.created_at, decision.arrived_at):
            # Not validated on replay: a refusal leaves nothing in history.
            raise ApplicationError(opened_after_arrival(req.step_id), type=CONFLICT_ERROR)
        if req.timeout_at is not None and workflow.now() >= datetime.fromisoformat(req.timeout_at):
            # Its timer fired while no worker was up: the timer and this decision reached
            # the run together, and the decision would be applied first.
            raise _timed_out(decision, req.timeout_at)
        try:
            check_decision(req, decision, self._schemas.get(decision.step_id, []))
        except GateError as exc:
            # The problems ride as the error's details: the API lists them (`details`).
            details = [{PROBLEMS: exc.problems}] if exc.problems else []
            raise ApplicationError(exc.message, *details, type=_ERROR_TYPES[exc.kind]) from None

    def _timed_out(self, step_id: str) -> str | None:
        """When the step's last gate timed out, if its timer decided it."""
        last = next((r for r in reversed(self.resolved) if r.step_id == step_id), None)
        if last is None or last.source != "timeout":
            return None
        return last.timeout_at or last.decided_at or "its deadline"

    def accept(self, decision: Decision) -> int:
        """The decide handler: take the decision; return how many gates still wait.

        Validators of updates delivered together all run before any handler, so this
        re-checks: the first to run wins, the rest are conflicts.
        """
        if decision.step_id not in self.open or decision.step_id in self._decisions:
            raise _already_decided(decision)
        self._decisions[decision.step_id] = decision
        return len(self.open) - len(self._decisions)

    def clear(self) -> None:
        """The run ended: no gate is open any more."""
        self.open.clear()


def _timed_out(decision: Decision, at: str) -> ApplicationError:
    return ApplicationError(
        f"The gate on step {decision.step_id!r} timed out at {at}; its onTimeout applies",
        type=CONFLICT_ERROR,
    )


def _already_decided(decision: Decision) -> ApplicationError:
    return ApplicationError(
        f"Requirement {decision.step_id!r} was already decided", type=CONFLICT_ERROR
    )
