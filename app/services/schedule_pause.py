"""Pausing and unpausing a schedule: a Temporal update of its state, and what a pause drops.

Temporal's own pause (a patch) leaves the schedule's update time as it was, so a pause
showed no `updatedAt`; an update of the state alone moves it, as a toggle moves a
workflow's. It is sent with the conflict token of the description it was made from
(schedule_update.py), so a PUT landing in between is not undone: Temporal then drops
ours, and the state is read again and the update made anew.

Firings due while one firing's trigger waited for a worker (`buffer_one`,
`buffer_all`) wait in Temporal's buffer, and a paused schedule drops them once that
trigger ends, starting nothing and counting nothing. Temporal tells how many wait
(`buffer_size`), not which, so the pause records that many skips.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from temporalio.client import Client, ScheduleDescription

from activities.scheduling import skip_event, skip_log_key
from activities.store.base import Store
from app.errors import ServiceUnavailable
from app.services.schedule_timing import temporal_call
from app.services.schedule_update import update_over

# A PUT or a pause between our read and our update makes Temporal drop ours; each try
# reads again. Five in a row is someone changing the schedule in a loop.
TRIES = 5
DROPPED = "dropped: the schedule was paused while this firing waited behind an open one"


async def set_state(
    client: Client, read: ScheduleDescription, paused: bool, note: str
) -> ScheduleDescription | None:
    """Pause or unpause the schedule described by `read`, with `note`: the schedule as
    it is after, or None when a change since `read` made Temporal drop the update."""
    state = dataclasses.replace(read.schedule.state, paused=paused, note=note)
    await temporal_call(
        read.id, update_over(client, read, dataclasses.replace(read.schedule, state=state))
    )
    after = await temporal_call(read.id, client.get_schedule_handle(read.id).describe())
    if after.raw_description.conflict_token == read.raw_description.conflict_token:
        return None  # nothing landed: not ours, nor anyone's
    return after if after.schedule.state.paused == paused else None


def waiting(read: ScheduleDescription) -> int:
    """How many firings wait in the schedule's buffer behind an open one."""
    return read.raw_description.info.buffer_size


def with_dropped(note: str, count: int) -> str:
    """The pause's note, saying how many waiting firings it drops."""
    if not count:
        return note
    return (
        f"{note}, dropping {count} firing{'s' if count != 1 else ''} that waited behind an open one"
    )


async def record_dropped(store: Store, read: ScheduleDescription, workflow_id: str) -> None:
    """One skip for each firing waiting when the schedule (described by `read`, before
    the pause) was paused. Keyed by that description's conflict token: pauses racing
    from one read record them once."""
    count = waiting(read)
    token = read.raw_description.conflict_token.decode(errors="replace")
    now = datetime.now(UTC)
    for index in range(count):
        reason = f"{DROPPED} ({index + 1} of {count} waiting)"
        event = skip_event(read.id, workflow_id, reason, now)
        await store.append_event(skip_log_key(read.id), event, key=f"paused:{token}:{index}")


def too_busy(schedule_id: str) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"Schedule {schedule_id} changed under each of {TRIES} tries to pause or unpause it; "
        "try again"
    )
