"""The live event stream of a run, as Server-Sent Events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.auth.caller import READ
from app.auth.guard import CallerDep, needs
from app.auth.stream_access import StreamAccess
from app.deps import EventHubDep, LastEventIdDep, RunDep, StoreDep
from app.openapi import API_PREFIX
from app.services.event_hub import EventHub
from app.services.event_stream import RunEventFollower

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/runs/{run_id}", tags=["events"])

# Read at request time, so tests can shorten them; proxies drop idle streams after ~30-60 s.
KEEP_ALIVE_SECONDS = 15.0
# How often a stream reads the store while the hub has no live feed (see event_hub.py).
POLL_SECONDS = 0.15
# How often an open stream with nothing to send asks the store again whether its caller
# may still read the run (it asks before every batch it sends, too).
ACCESS_RECHECK_SECONDS = 5.0
# How long a stream may take to end by itself once the server shuts down (it ends after
# its next read: within IDLE_SECONDS of event_stream.py). Longer than a stalled client's
# drop (app/http_protocol.py, ~3 s in), which ends a stream that cannot end by itself.
SHUTDOWN_GRACE_SECONDS = 5.0


# sse-starlette sets its media type per instance, so FastAPI would document no content
# type for the 200 at all; state what the stream is.
STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events: `id`, `event` (the type) and `data` (the event as "
        "JSON) per event; a comment line as keep-alive; ends after the run ends",
        # One event (as FastAPI documents its own SSE routes): its fields, `data` JSON.
        "content": {
            "text/event-stream": {
                "itemSchema": {
                    "type": "object",
                    "required": ["data", "event", "id"],
                    "properties": {
                        "data": {"type": "string", "contentMediaType": "application/json"},
                        "event": {"type": "string"},
                        "id": {"type": "string"},
                        "retry": {"type": "integer", "minimum": 0},
                    },
                }
            }
        },
    }
}


@router.get(
    "/events",
    response_class=EventSourceResponse,
    dependencies=[needs(READ)],
    responses=STREAM_RESPONSE,
)
async def stream_events(
    run: RunDep, store: StoreDep, hub: EventHubDep, after: LastEventIdDep, caller: CallerDep
) -> EventSourceResponse:
    """The run's events as they happen; resumes after `Last-Event-ID`, ends after the run."""
    access = StreamAccess(
        store,
        caller,
        workflow_id=run.workflow_definition_id,
        run_id=run.id,
        recheck_seconds=ACCESS_RECHECK_SECONDS,
    )
    follower = RunEventFollower(
        store, run.id, access=access, after_id=after, poll_seconds=POLL_SECONDS
    )
    # Set by sse-starlette when the server shuts down: the stream ends after its next
    # read with a complete body, instead of being cut off mid-chunk.
    shutting_down = anyio.Event()
    follower.should_stop = shutting_down.is_set
    return EventSourceResponse(
        _sse(follower, hub),
        ping=KEEP_ALIVE_SECONDS,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        shutdown_event=shutting_down,
        shutdown_grace_period=SHUTDOWN_GRACE_SECONDS,
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
            # A page is written event after event with no wait in between (the transport
            # takes each write at once): a client gone mid-page was noticed by uvicorn only
            # after the page, and every write to the lost connection from the sixth on
            # logged "socket.send() raised exception." (bare, hundreds per page). One turn
            # of the loop per event lets the lost connection be seen after the write that
            # failed; the rest of the page is then dropped unwritten, and the stream ends.
            await asyncio.sleep(0)
