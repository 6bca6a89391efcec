"""Follow a run's event log in the store, for the live stream (SSE).

Events are always read from the store (not from an in-process queue): that is what
lets the worker and the API run in different processes and the API run as several
replicas. The hub's doorbell (`event_hub.py`) says when to read; without it, or while
its feed is down, the follower polls. Whether the caller may still read the run is asked
again while the stream is open (`app/auth/stream_access.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.store.base import Store
from app.auth.stream_access import StreamAccess
from app.services.event_hub import Wakeup
from temporal_workflows.read_model import TERMINAL_EVENTS, TERMINAL_RUN_STATUSES

PAGE = 500
# An id below the newest one seen may still appear: MongoDB takes the id from a counter
# before inserting, so a slower writer can land a smaller id later. Ids seen for less
# than this long stay above the watermark and are re-read (and de-duplicated).
SETTLE_SECONDS = 2.0
# How long a terminal run is still followed for its terminal event.
GRACE = timedelta(seconds=1)
# With a live feed, read anyway after this long without a ring (a safety net).
IDLE_SECONDS = 1.0


@dataclass
class RunEventFollower:
    """Yields a run's events after `after_id`, in id order, until the run has ended or the
    caller may no longer read it."""

    store: Store
    run_id: str
    access: StreamAccess
    after_id: int = 0
    poll_seconds: float = 0.15
    wakeup: Wakeup | None = None
    # Checked after every wait: the server is shutting down, so end the stream cleanly.
    should_stop: Callable[[], bool] = field(default=lambda: False)
    _recent: dict[int, float] = field(default_factory=dict)
    _terminal_seen_at: float | None = None

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Each new event once; stops after a terminal event, when the run is over, or when
        the caller lost access to it."""
        # A full page is followed by the next one after it: read again from the settle
        # watermark instead, the same 500 events came back unsettled for 2 s, a busy loop
        # holding the API's event loop (every other request) for 2 s per 500 events.
        cursor = self.after_id
        while True:
            if self.wakeup is not None:
                self.wakeup.clear()
            from_watermark = cursor == self.after_id
            batch = await self.store.list_events(self.run_id, cursor, PAGE)
            fresh = [e for e in batch if e["id"] not in self._recent]
            # Asked after the read, so no event written after a revocation is sent; once
            # per batch, not per event.
            if fresh and not await self.access.allows_sending():
                return
            now = time.monotonic()
            for event in fresh:
                self._recent[event["id"]] = now
                yield event
                if event.get("type") in TERMINAL_EVENTS:
                    return
            if from_watermark or self.store.ids_visible_in_order:
                # Only what a read from the watermark covered may settle (to its last id
                # when its page was full): a late smaller id lands among ids read then.
                self._settle(now, batch[-1]["id"] if len(batch) == PAGE else None)
            if len(batch) == PAGE:
                # More waiting: read on without sleeping, letting other requests in between.
                cursor = batch[-1]["id"]
                await asyncio.sleep(0)
                if self.should_stop():
                    return
                continue
            cursor = self.after_id  # caught up: smaller ids landing late are read too
            if not fresh and await self._run_over(now):
                return
            await self._wait()
            if self.should_stop():
                return  # the client resumes with Last-Event-ID (on another replica)
            if not await self.access.allows_while_idle():
                return  # a silent stream is not held open for who lost access

    async def _wait(self) -> None:
        if self.wakeup is None:
            await asyncio.sleep(self.poll_seconds)
        else:
            await self.wakeup.wait(self.poll_seconds, IDLE_SECONDS)

    def _settle(self, now: float, upto: int | None) -> None:
        """Move the watermark past the ids seen long enough ago that no smaller id can appear
        (at once where the store's ids become readable in order), up to `upto` at most."""
        settle = 0.0 if self.store.ids_visible_in_order else SETTLE_SECONDS
        for event_id in sorted(self._recent):
            if upto is not None and event_id > upto:
                break
            if now - self._recent[event_id] < settle:
                break
            self.after_id = max(self.after_id, event_id)
        self._recent = {i: t for i, t in self._recent.items() if i > self.after_id}

    async def _run_over(self, now: float) -> bool:
        """True when the run is gone, or terminal with its last event read.

        The terminal status is written just before its event, so a terminal run is
        followed a little longer for that event; a run the reconciler closed has none.
        """
        run = await self.store.get_run(self.run_id)
        if run is None:
            return True
        if run.status not in TERMINAL_RUN_STATUSES:
            return False
        if self._terminal_seen_at is None:
            self._terminal_seen_at = now
        # Ended a while ago: its last event was already in the store when we read.
        ended_long_ago = datetime.now(UTC) - run.updated_at >= GRACE
        return ended_long_ago or now - self._terminal_seen_at >= GRACE.total_seconds()
