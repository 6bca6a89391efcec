"""Schedules of a workflow: recurring runs on Temporal Schedules."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from activities.run_start import WorkflowDisabled
from app.auth.caller import CONTROL, READ, WRITE
from app.auth.guard import needs
from app.deps import (
    KEY_REUSED,
    MAX_EVENT_ID,
    WHOLE_NUMBER,
    IdempotencyKey,
    ScheduleIdDep,
    SchedulesDep,
    WorkflowDep,
)
from app.no_body import no_body
from app.openapi import API_PREFIX, errors
from app.routes.conditional import IfMatch
from app.schemas.schedule import (
    ScheduleCreate,
    ScheduleFired,
    ScheduleList,
    SchedulePublic,
    ScheduleSkipList,
)
from app.services.schedules import schedule_tag

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/schedules", tags=["schedules"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    dependencies=[needs(WRITE, "EDIT", also=CONTROL)],
    responses=errors(
        409, s409=f"{KEY_REUSED}; or the workflow has TRELLIS_MAX_SCHEDULES_PER_WORKFLOW already"
    ),
)
async def create_schedule(
    workflow: WorkflowDep,
    body: ScheduleCreate,
    schedules: SchedulesDep,
    idempotency_key: IdempotencyKey = None,
) -> SchedulePublic:
    """Create a recurring schedule (cron or interval) for the workflow."""
    return await schedules.create(workflow, body, idempotency_key)


@router.get("", dependencies=[needs(READ)])
async def list_schedules(workflow: WorkflowDep, schedules: SchedulesDep) -> ScheduleList:
    """The workflow's schedules, oldest first."""
    return await schedules.list_all(workflow)


@router.get("/{schedule_id}", dependencies=[needs(READ)])
async def get_schedule(
    schedule_id: ScheduleIdDep, schedules: SchedulesDep, response: Response
) -> SchedulePublic:
    """One schedule with its next and recent firings (and its `ETag`, for `If-Match`)."""
    return tagged(response, await schedules.get(schedule_id))


@router.put(
    "/{schedule_id}",
    dependencies=[needs(WRITE, "EDIT", also=CONTROL)],
    responses=errors(412),
)
async def replace_schedule(
    workflow: WorkflowDep,
    schedule_id: ScheduleIdDep,
    body: ScheduleCreate,
    schedules: SchedulesDep,
    response: Response,
    if_match: IfMatch = None,
) -> SchedulePublic:
    """Replace the schedule's timing, input, overlap policy and paused state (412 when
    `If-Match` is not its current `ETag`)."""
    return tagged(response, await schedules.replace(workflow, schedule_id, body, if_match))


def tagged(response: Response, schedule: SchedulePublic) -> SchedulePublic:
    response.headers["ETag"] = schedule_tag(schedule)
    return schedule


@router.delete(
    "/{schedule_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[needs(WRITE, "EDIT")]
)
async def delete_schedule(schedule_id: ScheduleIdDep, schedules: SchedulesDep) -> Response:
    """Delete the schedule; runs it started carry on."""
    await schedules.delete(schedule_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{schedule_id}/pause",
    dependencies=[needs(WRITE, "EDIT"), no_body("schedule's pause")],
    responses=errors(400),
)
async def pause_schedule(schedule_id: ScheduleIdDep, schedules: SchedulesDep) -> SchedulePublic:
    """Stop firing until unpaused."""
    return await schedules.set_paused(schedule_id, True)


@router.post(
    "/{schedule_id}/unpause",
    dependencies=[needs(WRITE, "EDIT", also=CONTROL), no_body("schedule's unpause")],
    responses=errors(400),
)
async def unpause_schedule(schedule_id: ScheduleIdDep, schedules: SchedulesDep) -> SchedulePublic:
    """Fire again on the schedule's timing."""
    return await schedules.set_paused(schedule_id, False)


@router.post(
    "/{schedule_id}/trigger",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[needs(CONTROL), no_body("schedule's trigger")],
    responses=errors(400, s400="the workflow is disabled, or a body was sent"),
)
async def trigger_schedule(
    schedule_id: ScheduleIdDep, workflow: WorkflowDep, schedules: SchedulesDep
) -> ScheduleFired:
    """Fire once now, as if the schedule's time had come (400 while the workflow is
    disabled: the firing would start nothing, as every path to a run of it does)."""
    if not workflow.enabled:
        await schedules.get(schedule_id)  # one that does not exist is 404 all the same
        raise WorkflowDisabled(workflow.id)
    await schedules.trigger(schedule_id)
    return ScheduleFired(schedule_id=schedule_id)


@router.get("/{schedule_id}/skips", dependencies=[needs(READ)])
async def list_skips(
    schedule_id: ScheduleIdDep,
    schedules: SchedulesDep,
    after_id: Annotated[int, Query(alias="afterId", ge=0, le=MAX_EVENT_ID), WHOLE_NUMBER] = 0,
    limit: Annotated[int, Query(ge=1, le=500), WHOLE_NUMBER] = 100,
) -> ScheduleSkipList:
    """Firings that started no run (e.g. the workflow was disabled), oldest first."""
    return await schedules.skips(schedule_id, after_id, limit)
