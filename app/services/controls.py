"""Steering runs: decisions, pause, resume and cancel go to the workflow as Temporal Updates.

The workflow's validators decide; their errors (`WorkflowUpdateFailedError`) pass through
to `app/errors.py`, and Temporal's refusals are wrapped with the run they concern.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.start_claim import CANCEL_REQUESTED_KEY, cancel_before_start
from activities.store.base import Store
from activities.store.records import RunRecord, utcnow
from app.auth.acl import require_approver
from app.auth.caller import Caller
from app.errors import Conflict, InvalidRequest, RunRefused, UpdateNotTaken
from app.schemas.control import ApproveRequest, SeenGate
from app.services.never_ran import end_if_never_ran
from temporal_workflows.clock import iso
from temporal_workflows.contracts import (
    DECIDE,
    GATE_NOT_OPEN,
    PAUSE,
    PENDING_REQUIREMENTS,
    RESUME,
    ControlRequest,
    ControlResult,
)
from temporal_workflows.gate_arrival import opened_after, opened_after_arrival
from temporal_workflows.gates import GATE_KINDS, Decision, DecisionResult, as_saved, gate_key
from temporal_workflows.json_data import bounded_json_size
from temporal_workflows.read_model import TERMINAL_RUN_STATUSES, run_event

# How long the API waits for the worker to take an update before answering 503.
UPDATE_TIMEOUT_SECONDS = 15.0
# Temporal's words for an update whose workflow task failed, and the pause before it is
# sent once more.
TASK_FAILED = "unexpected workflow task failure"
TASK_FAILED_RETRY_SECONDS = 0.2
# How long a decision waits for a gate that the store shows open and the workflow does not
# have open: the workflow task that opened it wrote the store, then was lost with a worker
# or a Temporal restart, and runs again within seconds (the task's timeout is 10 s).
GATE_SETTLE_SECONDS = 12.0
GATE_SETTLE_POLL_SECONDS = 0.25


@dataclass
class ControlService:
    temporal: Client
    store: Store
    # Who asks: their sub is recorded as decidedBy / requestedBy.
    caller: Caller
    # The largest step output (TRELLIS_MAX_PAYLOAD_BYTES): an edited output is one too.
    max_output_bytes: int | None = None

    @property
    def who(self) -> str:
        return self.caller.sub

    def _fits_as_output(self, edited: Any) -> None:
        """400 for an edited output larger than a step's output may be (it was taken, and
        the run went on with it, though a step returning it fails)."""
        most = self.max_output_bytes
        if most is not None and (size := bounded_json_size(edited, most)) > most:
            raise InvalidRequest(
                f"editedOutput is more than {most} bytes of JSON ({size} at least): the "
                "limit of a step's output (TRELLIS_MAX_PAYLOAD_BYTES); nothing was decided"
            )

    async def decide(
        self,
        run: RunRecord,
        body: ApproveRequest,
        key: str | None = None,
        arrived: datetime | None = None,
    ) -> DecisionResult:
        """Resolve one pending requirement; returns once the workflow accepted it.

        Under an `Idempotency-Key` the Temporal update's id is the caller's key, so a
        repeat (its answer lost) is answered with the first decision's result, even after
        the run ended, and decides nothing again: a loop's next iteration review has the
        same stepId, and a plain repeat would decide it too.

        Without a key or `gate`, it decides only an opening open when the request
        `arrived` (temporal_workflows/gate_arrival.py): 409 for one opened since.
        """
        # Who may decide first: one who may not is told so (403) whatever the run's state
        # (a non-approver was told 409 "completed" or 403 by how fast the run went).
        require_approver(self.caller, run, body.step_id)
        if body.resolution == "edit":
            self._fits_as_output(body.edited_output)
        ended = run.status in TERMINAL_RUN_STATUSES
        if ended and key is None:
            raise Conflict(f"Run is {run.status}, not awaiting approval")
        # Only what the resolution takes goes to the gate: a confirm's userInput was used
        # unchecked (its check reads a confirm as the form's defaults) and a confirm's
        # selectedChoices was kept in the audit trail though the suggestion ran.
        resolution = body.resolution
        edit = resolution == "edit"
        decision = Decision(
            step_id=body.step_id,
            resolution=resolution,
            feedback=body.feedback,
            edited_output=body.edited_output if edit else None,
            # Sent, even as null: `editedOutput: null` is an edit to an empty output.
            has_edited_output=edit and "edited_output" in body.model_fields_set,
            user_input=body.user_input if resolution == "user_input" else None,
            selected_choices=(
                _as_saved(run, body.step_id, body.selected_choices)
                if resolution == "route_select"
                else None
            ),
            decided_by=self.who,
            # Under a key, a repeat whose first answer was lost is answered as the first,
            # though the gate it decided has been followed by another since.
            **(seen := _seen_gate(run, body, early=key is None, arrived=arrived)),
            # The record read showed none open: the workflow refuses an opening after the
            # arrival. (Not for one shown: a workflow task run again gives it a new time.)
            arrived_at=None if arrived is None or key or seen else iso(arrived),
        )
        update_id = None
        if key is not None:
            decision = decision.model_copy(update={"request_fingerprint": fingerprint(decision)})
            update_id = keyed_update_id(DECIDE, self.who, key)
        settled_by = asyncio.get_running_loop().time() + GATE_SETTLE_SECONDS
        while True:
            try:
                result: DecisionResult = await self._update(
                    run, DECIDE, decision, DecisionResult, update_id=update_id
                )
            except RunRefused:
                if ended:  # the key's first use is not this run's: it ended undecided
                    raise Conflict(f"Run is {run.status}, not awaiting approval") from None
                raise
            except WorkflowUpdateFailedError as exc:
                if not _gate_not_open(exc) or asyncio.get_running_loop().time() >= settled_by:
                    raise
                fresh = await self._store_shows_open(run.id, body.step_id)
                if fresh is None:
                    raise
                if decision.seen_gate is None and decision.seen_kind is None:
                    # The record read first showed none open: sent again, it is for the
                    # opening shown now, if that was open when the request arrived (not
                    # the next one, opened after a decision that came with it).
                    seen = _seen_gate(fresh, body, early=key is None, arrived=arrived)
                    decision = decision.model_copy(update={**seen, "arrived_at": None})
                await asyncio.sleep(GATE_SETTLE_POLL_SECONDS)
                continue
            first = result.request_fingerprint
            if first is not None and first != decision.request_fingerprint:
                raise Conflict(
                    "Idempotency-Key was first used for another decision on this run (step "
                    f"{result.resolved_step_id!r}): repeat that request unchanged, or use a new "
                    "key for a new decision"
                )
            return result

    async def _store_shows_open(self, run_id: str, step_id: str) -> RunRecord | None:
        """The run's record when it still shows the gate waiting (the workflow wrote it)."""
        fresh = await self.store.get_run(run_id)
        if (
            fresh is not None
            and fresh.status not in TERMINAL_RUN_STATUSES
            and any(r.get("stepId") == step_id for r in fresh.pending_requirements)
        ):
            return fresh
        return None

    async def pause(self, run: RunRecord, key: str | None = None) -> ControlResult:
        # Under a key the workflow decides (its validator refuses a paused run): a repeat
        # whose first answer was lost finds the run paused, and is answered as the first.
        if key is None and run.status not in ("running", "awaiting_approval"):
            hint = (
                " (a pause sent with an Idempotency-Key is taken as the run starts)"
                if run.status == "pending"
                else ""
            )
            raise Conflict(
                f"Run is {run.status}; only a running or waiting run can be paused{hint}"
            )
        return await self._control(run, PAUSE, key)

    async def resume(self, run: RunRecord, key: str | None = None) -> ControlResult:
        if key is None and run.status != "paused":
            raise Conflict(f"Run is {run.status}; only a paused run can be resumed")
        return await self._control(run, RESUME, key)

    async def _control(self, run: RunRecord, name: str, key: str | None) -> ControlResult:
        """A pause or resume; under an `Idempotency-Key` the update's id is the caller's key,
        so Temporal answers a repeat with the first result and applies it once."""
        update_id = None if key is None else keyed_update_id(name, self.who, key)
        try:
            result: ControlResult = await self._update(
                run, name, ControlRequest(requested_by=self.who), ControlResult, update_id
            )
        except RunRefused:
            if key is not None and run.status in TERMINAL_RUN_STATUSES:
                raise Conflict(f"Run is already {run.status}") from None
            raise
        return result

    async def cancel(self, run: RunRecord) -> None:
        """Request Temporal cancellation: in-flight steps are cancelled, then the run."""
        if run.status in TERMINAL_RUN_STATUSES:
            raise Conflict(f"Run is already {run.status}")
        await self._refuse_if_closed(run)
        # A run with nothing in flight (at a gate, paused) ends as soon as Temporal cancels
        # it, and a stream closes at the run's end: the request is logged first, so it
        # precedes the end. A run that never started logs it again with its cancellation
        # in the store (`cancel_before_start`), under the same key: a repeat, not logged.
        await self._log_cancel_requested(run)
        try:
            await self._cancel_workflow(run.id)
            if run.status == "pending":  # its workflow may never have run a task to the end
                await end_if_never_ran(
                    self.store, self.temporal.get_workflow_handle(run.id), self.who
                )
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise RunRefused(run.id, exc) from exc
            await self._cancel_unstarted(run, exc)

    async def _refuse_if_closed(self, run: RunRecord) -> None:
        """Temporal takes a cancellation of a closed workflow and does nothing: a run the
        store shows open whose workflow has closed (a store restored from an older copy
        before the reconciler's pass) is refused as a pause is, not told it stops shortly."""
        try:
            described = await self.temporal.get_workflow_handle(run.id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return  # never started: cancelled in the store
            raise RunRefused(run.id, exc) from exc
        closed = described.status
        if closed is not None and closed != WorkflowExecutionStatus.RUNNING:
            raise Conflict(
                f"Run {run.id} is no longer running (its workflow is "
                f"{_CLOSED_AS.get(closed, closed.name.lower())} in Temporal; the store"
                " catches up shortly)"
            )

    async def _log_cancel_requested(self, run: RunRecord) -> None:
        await self.store.append_event(
            run.id,
            run_event(
                "cancel_requested",
                run_id=run.id,
                status=run.status,
                timestamp=utcnow().isoformat().replace("+00:00", "Z"),
                requestedBy=self.who,
            ),
            # Logged once per run: a cancel repeated before the run ended (its worker
            # down, say) asks for nothing new.
            key=CANCEL_REQUESTED_KEY,
        )

    async def _cancel_unstarted(self, run: RunRecord, not_found: RPCError) -> None:
        """Cancel a run Temporal does not know: in the store, or in Temporal after all when
        its start won meanwhile."""
        for _ in range(2):
            outcome = await cancel_before_start(self.store, run.id, self.who)
            if outcome == "ended":
                raise RunRefused(run.id, not_found)
            if outcome == "cancelled":
                return
            try:
                # Started after all (its workflow wrote, or a start claimed it first), or a
                # start may be in flight: that starter cancels what it started when it
                # reads the run cancelled.
                await self._cancel_workflow(run.id)
                return
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise RunRefused(run.id, exc) from exc
                if outcome == "overwritten":
                    return
                not_found = exc  # a claim without a workflow yet: cancel it in the store
        raise RunRefused(run.id, not_found)

    async def _cancel_workflow(self, run_id: str) -> None:
        # The reason is kept in the Temporal history (a cancellation carries no payload
        # the workflow could record); the run's event log says who asked.
        await self.temporal.get_workflow_handle(run_id).cancel(
            reason=f"cancel requested by {self.who}"
        )

    async def live_requirements(self, run: RunRecord) -> list[dict[str, Any]] | None:
        """The open gates read through a query, or None when the workflow cannot answer."""
        if run.status in TERMINAL_RUN_STATUSES:
            return None
        try:
            handle = self.temporal.get_workflow_handle(run.id)
            reqs = await asyncio.wait_for(handle.query(PENDING_REQUIREMENTS), 5.0)
        except (RPCError, TimeoutError, Exception):
            return None
        return [dict(r) for r in reqs]

    async def _update(
        self,
        run: RunRecord,
        name: str,
        arg: Any,
        result_type: type,
        update_id: str | None = None,
    ) -> Any:
        handle = self.temporal.get_workflow_handle(run.id)
        update_id = update_id or f"{name}-{uuid.uuid4()}"
        for last in (False, True):
            try:
                return await asyncio.wait_for(
                    handle.execute_update(name, arg, id=update_id, result_type=result_type),
                    UPDATE_TIMEOUT_SECONDS,
                )
            except RPCError as exc:
                if last or not _task_failed_once(exc):
                    raise RunRefused(run.id, exc) from exc
                # The task that took it failed (a cancel came at the same moment, and
                # Temporal refused the task's end), so nothing was applied: sent again, it
                # meets the run as it now is (ended: 409), not a 503 saying to repeat it.
                await asyncio.sleep(TASK_FAILED_RETRY_SECONDS)
            except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
                # wait_for cancels the update call, which the SDK reports as its own error.
                raise UpdateNotTaken(run.id) from None
        raise AssertionError("unreachable")


# Temporal's names of a closed workflow's status, in the API's words ("canceled").
_CLOSED_AS = {
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TIMED_OUT: "timed out",
}


def keyed_update_id(name: str, who: str, key: str) -> str:
    """The update's id for a caller's Idempotency-Key: Temporal applies an update id once
    per run and answers a repeat with its first result. A key is the caller's own."""
    digest = hashlib.sha256(f"{who}\0{key}".encode()).hexdigest()[:40]
    return f"{name}-key-{digest}"


def _as_saved(run: RunRecord, step_id: str, selected: list[str] | None) -> list[str] | None:
    """Each selected choice as the router saved it, when the two differ only in Unicode
    form ("café" typed composed, saved decomposed): the router's own selection compares
    names in NFC (docs/semantics.md), and a person's was refused as "not a choice"."""
    if not selected:
        return selected
    for gate in run.pending_requirements:
        if gate.get("stepId") == step_id:
            return as_saved(selected, gate.get("availableChoices") or [])
    return selected


def _seen_gate(
    run: RunRecord, body: ApproveRequest, early: bool, arrived: datetime | None = None
) -> dict[str, Any]:
    """Which opening of the step's gate the decision is for (`seen_gate`, `seen_kind`):
    the one the caller says it saw (`gate`), else the one the run's record shows open;
    none when neither. A caller's gate that the record shows replaced by another is 409
    (at once when `early`; else the workflow refuses it): a card drawn for a loop's
    iteration 0, pressed after someone else continued it, decided iteration 1, which
    nobody had seen. So is, when `early`, a shown one that opened after the request
    `arrived` (a double click's second confirm, read after the first's decision)."""
    shown = next((g for g in run.pending_requirements if g.get("stepId") == body.step_id), None)
    if shown is not None:
        open_key = gate_key(shown.get("nodeRunId"), shown.get("iteration"), shown.get("itemIndex"))
        kind = shown.get("kind")
        open_kind = kind if kind in GATE_KINDS else None
    else:
        open_key = open_kind = None
    saw = body.gate
    if saw is None:
        if shown is None:
            return {}
        if early and arrived is not None and opened_after(shown.get("createdAt"), iso(arrived)):
            raise Conflict(opened_after_arrival(body.step_id, _opening_shown(shown)))
        return {"seen_gate": open_key, "seen_kind": open_kind}
    seen_key = gate_key(saw.node_run_id, saw.iteration, saw.item_index)
    if (
        early
        and shown is not None
        and (
            (open_key is not None and open_key != seen_key)
            or (saw.kind is not None and open_kind is not None and saw.kind != open_kind)
        )
    ):
        raise Conflict(
            f"The gate of step {body.step_id!r} that was seen ({_opening(saw)}) was decided "
            f"already; another is open now ({_opening_shown(shown)}): read the run again"
        )
    return {"seen_gate": seen_key, "seen_kind": saw.kind}


def _opening(gate: SeenGate) -> str:
    said = [f"node run {gate.node_run_id}"]
    if gate.iteration is not None:
        said.append(f"iteration {gate.iteration}")
    if gate.item_index is not None:
        said.append(f"item {gate.item_index}")
    if gate.kind is not None:
        said.append(gate.kind.replace("_", " "))
    return ", ".join(said)


def _opening_shown(shown: dict[str, Any]) -> str:
    kind = shown.get("kind")
    return _opening(
        SeenGate(
            node_run_id=str(shown.get("nodeRunId")),
            iteration=shown.get("iteration"),
            item_index=shown.get("itemIndex"),
            kind=kind if kind in GATE_KINDS else None,
        )
    )


def fingerprint(decision: Decision) -> str:
    """What a decision asks, hashed (who asks included), to tell a repeat from another
    (not which gate its caller saw: a repeat after the gate moved on is the same request)."""
    asked = decision.model_dump(
        mode="json", exclude={"request_fingerprint", "seen_gate", "seen_kind", "arrived_at"}
    )
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()


def _task_failed_once(exc: RPCError) -> bool:
    """Temporal aborted the update because the workflow task that took it failed."""
    return exc.status == RPCStatusCode.FAILED_PRECONDITION and TASK_FAILED in exc.message


def _gate_not_open(exc: WorkflowUpdateFailedError) -> bool:
    cause = exc.cause
    return isinstance(cause, ApplicationError) and GATE_NOT_OPEN in cause.details
