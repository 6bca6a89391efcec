"""Steering a run: approve (contract 10), pause, resume, cancel, live requirements."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.arrival import arrived_at
from app.auth.caller import CONTROL, READ
from app.auth.guard import needs
from app.deps import KEY_REUSED, ControlsDep, IdempotencyKey, RunDep
from app.no_body import no_body
from app.openapi import API_PREFIX, errors
from app.schemas.control import (
    ApproveRequest,
    ApproveResponse,
    ControlResponse,
    LiveRequirements,
)

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/runs/{run_id}", tags=["controls"])

DECIDED = "conflict: the gate was decided already, or the run is not waiting at it"
STATE = "conflict: the run's status does not allow this (or it is no longer running)"


@router.post(
    "/approve",
    dependencies=[needs(CONTROL)],
    responses=errors(409, s409=f"{DECIDED}; {KEY_REUSED}"),
)
async def approve(
    request: Request,
    run: RunDep,
    body: ApproveRequest,
    controls: ControlsDep,
    idempotency_key: IdempotencyKey = None,
) -> ApproveResponse:
    """Resolve one pending HITL requirement (exactly once). With an `Idempotency-Key`, a
    repeat of the request is answered as the first was and decides nothing again."""
    result = await controls.decide(run, body, idempotency_key, arrived_at(request))
    return ApproveResponse(
        run_id=result.run_id,
        status=result.status,
        resolved_step_id=result.resolved_step_id,
        message=_decided(body.resolution, result.status),
    )


# What a decision's answer says the run does next, by the status it moves to.
_NEXT = {
    "paused": "the run stays paused until resumed",
    "awaiting_approval": "the run waits for its other open gates",
    "cancelled": "the run is cancelled (the gate's onReject is cancel)",
    "failed": "the run fails (the gate's retries are spent)",
}


def _decided(resolution: str, status: str) -> str:
    return f"Requirement resolved as {resolution}; {_NEXT.get(status, 'run resuming')}"


@router.post(
    "/pause",
    dependencies=[needs(CONTROL), no_body("pause")],
    responses=errors(400, 409, s409=STATE),
)
async def pause(
    run: RunDep, controls: ControlsDep, idempotency_key: IdempotencyKey = None
) -> ControlResponse:
    """Pause at the next node boundary; in-flight steps finish. With an `Idempotency-Key`,
    a repeat (its answer lost) is answered as the first was, and pauses nothing again."""
    result = await controls.pause(run, idempotency_key)
    return ControlResponse(run_id=run.id, status=result.status, message="Run paused")


@router.post(
    "/resume",
    dependencies=[needs(CONTROL), no_body("resume")],
    responses=errors(400, 409, s409=STATE),
)
async def resume(
    run: RunDep, controls: ControlsDep, idempotency_key: IdempotencyKey = None
) -> ControlResponse:
    """Continue a paused run. With an `Idempotency-Key`, a repeat (its answer lost) is
    answered as the first was, and resumes nothing again."""
    result = await controls.resume(run, idempotency_key)
    return ControlResponse(run_id=run.id, status=result.status, message="Run resumed")


@router.post(
    "/cancel",
    dependencies=[needs(CONTROL), no_body("cancel")],
    responses=errors(400, 409, s409=STATE),
)
async def cancel(run: RunDep, controls: ControlsDep) -> ControlResponse:
    """Cancel the run: in-flight steps are cancelled, no new step starts."""
    await controls.cancel(run)
    return ControlResponse(
        run_id=run.id, status=run.status, message="Cancellation requested; the run stops shortly"
    )


@router.get("/requirements", dependencies=[needs(READ)])
async def live_requirements(run: RunDep, controls: ControlsDep) -> LiveRequirements:
    """The open gates, read live from the workflow (from the store when it cannot answer)."""
    live = await controls.live_requirements(run)
    return LiveRequirements(
        run_id=run.id,
        status=run.status,
        source="workflow" if live is not None else "store",
        pending_requirements=live if live is not None else run.pending_requirements,
    )
