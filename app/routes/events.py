"""The live event stream of a run, as Server-Sent Events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.deps import StoreDep
from app.errors import InvalidRequest
from app.routes.runs import RunDep
from app.services.event_hub import EventHub
from app.services.event_stream import RunEventFollower

router = APIRouter(prefix="/workflows/{workflow_id}/runs/{run_id}", tags=["events"])

# Read at request time, so tests can shorten them; proxies drop idle streams after ~30-60 s.
KEEP_ALIVE_SECONDS = 15.0
# How often a stream reads the store while the hub has no live feed (see event_hub.py).
POLL_SECONDS = 0.15


@router.get("/events", response_class=EventSourceResponse)
async def stream_events(
    request: Request,
    run: RunDep,
    store: StoreDep,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event_id: Annotated[str | None, Query(alias="lastEventId")] = None,
) -> EventSourceResponse:
    """The run's events as they happen; resumes after `Last-Event-ID`, ends after the run."""
    after = _event_id(last_event_id_header or last_event_id)
    hub: EventHub = request.app.state.event_hub
    return EventSourceResponse(
        _sse(RunEventFollower(store, run.id, after_id=after, poll_seconds=POLL_SECONDS), hub),
        ping=KEEP_ALIVE_SECONDS,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _sse(follower: RunEventFollower, hub: EventHub) -> AsyncIterator[ServerSentEvent]:
    async with hub.subscribe(follower.run_id) as wakeup:
        follower.wakeup = wakeup
        async for event in follower.events():
            yield ServerSentEvent(
                data=json.dumps(event, separators=(",", ":")),
                event=str(event.get("type", "message")),
                id=str(event["id"]),
            )


def _event_id(value: str | None) -> int:
    if value is None or value == "":
        return 0
    if not value.isdigit():
        raise InvalidRequest(f"Invalid Last-Event-ID {value[:40]!r}: event ids are integers")
    return int(value)
