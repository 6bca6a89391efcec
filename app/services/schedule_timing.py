"""A schedule's timing on Temporal: its spec from the body, and whether it ever fires.

Temporal accepts a cron no date matches (`0 0 31 2 *`) and keeps a schedule that never
fires. Its own calendar says so (it requires day of month *and* day of week, unlike
classic cron, so no evaluator of ours could stand in for it): `require_firing` asks it
on a throwaway probe schedule before anything of the workflow's is made or changed. A
PUT asks a probe too (`kept_as`): how Temporal keeps the new timing, to compare with the
schedule as it is in Temporal now.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from app.errors import InvalidRequest, ScheduleRefused
from app.schemas.cron import normalized
from app.schemas.schedule import ScheduleCreate

T = TypeVar("T")

# The probe names a workflow type nothing runs and is paused, so it never fires; it has
# no search attribute, so no workflow lists it.
PROBE_PREFIX = "trellis-cron-check-"
PROBE_WORKFLOW_TYPE = "TrellisCronCheck"
# A check takes milliseconds; a probe this old was left by an API that died mid-check.
PROBE_MAX_AGE = timedelta(minutes=1)
PROBES_QUERY = f"ScheduleId STARTS_WITH '{PROBE_PREFIX}'"


def schedule_spec(body: ScheduleCreate) -> ScheduleSpec:
    """The Temporal spec of a create or replace body."""
    return ScheduleSpec(
        # Backwards ranges (FRI-MON) wrap; Temporal wants them split in two.
        cron_expressions=[normalized(body.cron)] if body.cron else [],
        intervals=[ScheduleIntervalSpec(every=timedelta(seconds=body.interval_seconds))]
        if body.interval_seconds
        else [],
        time_zone_name=body.time_zone,
    )


async def require_firing(client: Client, task_queue: str, body: ScheduleCreate) -> None:
    """InvalidRequest (400, path `cron`) when the body's cron never fires: Temporal's
    calendar decides, on a paused probe schedule with the same spec, made and deleted."""
    if body.cron is not None:  # an interval always fires
        await kept_as(client, task_queue, body)


async def kept_as(
    client: Client, task_queue: str, body: ScheduleCreate, policy: SchedulePolicy | None = None
) -> Schedule:
    """The schedule as Temporal keeps the body's spec and `policy` (it turns a cron into
    calendars, fills defaults): a paused probe made with them, described and deleted.
    InvalidRequest (400, path `cron`) when the body's cron never fires."""
    probe_id = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
    probe = Schedule(
        action=ScheduleActionStartWorkflow(
            PROBE_WORKFLOW_TYPE, id=f"{probe_id}-run", task_queue=task_queue
        ),
        spec=schedule_spec(body),
        policy=policy or SchedulePolicy(),
        state=ScheduleState(paused=True, note="Trellis: how does Temporal keep this timing?"),
    )
    handle = await temporal_call(probe_id, client.create_schedule(probe_id, probe))
    try:
        desc = await temporal_call(probe_id, handle.describe())
    finally:
        await temporal_call(probe_id, handle.delete())
    if body.cron is not None and not desc.info.next_action_times:
        problem = (
            f"{body.cron!r} never fires: no date matches its day of month, month and "
            "day of week (a schedule needs all three)"
        )
        raise InvalidRequest(
            f"Invalid request: cron: {problem}", [{"path": "cron", "message": problem}]
        )
    return desc.schedule


async def sweep_probes(client: Client, older_than: timedelta = PROBE_MAX_AGE) -> list[str]:
    """Delete the cron-check probes older than `older_than` (left by an API that died
    between making and deleting one); younger ones belong to checks in progress."""
    swept: list[str] = []
    cutoff = datetime.now(UTC) - older_than
    async for listed in await client.list_schedules(query=PROBES_QUERY):
        if not listed.id.startswith(PROBE_PREFIX):
            continue
        handle = client.get_schedule_handle(listed.id)
        try:
            desc = await handle.describe()
            action = desc.schedule.action
            # Only a probe: paused, starting the type nothing runs.
            if (
                not isinstance(action, ScheduleActionStartWorkflow)
                or action.workflow != PROBE_WORKFLOW_TYPE
                or not desc.schedule.state.paused
                or desc.info.created_at > cutoff
            ):
                continue
            await handle.delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:  # its check deleted it meanwhile
                raise
            continue
        swept.append(listed.id)
    return swept


async def temporal_call(schedule_id: str, call: Awaitable[T]) -> T:
    """Await a Temporal call on a schedule; what Temporal refuses is about the schedule."""
    try:
        return await call
    except RPCError as exc:
        raise ScheduleRefused(exc, schedule_id) from exc
