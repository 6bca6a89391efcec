"""Wake-ups for live streams: the store's feed of written events, fanned out per run.

One hub per API process follows the store (SQLite: one query every few milliseconds
over the events table, on its own connection; MongoDB: one change stream on the events
collection) while at least one stream is open, and wakes the streams of the runs that
got new events. The feed is only a doorbell: a stream still reads its events from the
store, so nothing depends on the feed being complete, and the worker, the API and
several API replicas need share nothing but the store. Without a feed (a standalone
MongoDB has no change streams) streams fall back to polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from activities.store.base import Store

log = logging.getLogger(__name__)

# How long a new stream waits for the feed to listen before it reads (it polls meanwhile).
# A feed that fails to start (a standalone MongoDB has no change streams) ends the wait.
READY_SECONDS = 2.0
RETRY_SECONDS = 5.0


@dataclass
class Wakeup:
    """One stream's doorbell: `ring` is set when its run got events; `live` while the feed runs."""

    ring: asyncio.Event
    live: asyncio.Event

    async def wait(self, poll_seconds: float, idle_seconds: float) -> None:
        """Until the run gets events, or a poll interval (the feed is down) or idle_seconds."""
        timeout = idle_seconds if self.live.is_set() else poll_seconds
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.ring.wait()

    def clear(self) -> None:
        """Called before each read: a write after it rings again, so none is missed."""
        self.ring.clear()


class EventHub:
    def __init__(self, store: Store, retry_seconds: float = RETRY_SECONDS) -> None:
        self._store = store
        self._retry_seconds = retry_seconds
        self._rings: dict[str, set[asyncio.Event]] = {}
        self._live = asyncio.Event()
        # Set once the feed's latest attempt to start has either begun listening or failed.
        self._tried = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[Wakeup]:
        """A doorbell for one run, rung by every event written for it while open."""
        ring = asyncio.Event()
        self._rings.setdefault(run_id, set()).add(ring)
        if self._task is None or self._task.done():
            self._tried.clear()
            self._task = asyncio.create_task(self._follow())
        try:
            # Listening before the stream's first read: nothing written after it is missed.
            # A feed that cannot start is not waited for: the stream polls at once.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(READY_SECONDS):
                    await self._tried.wait()
            yield Wakeup(ring, self._live)
        finally:
            rings = self._rings.get(run_id, set())
            rings.discard(ring)
            if not rings:
                self._rings.pop(run_id, None)
            if not self._rings:
                await self.close()  # no stream open: stop following the store

    async def close(self) -> None:
        task, self._task = self._task, None
        self._live.clear()
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self) -> None:
        while True:
            try:
                async for run_ids in self._store.watch_event_runs():
                    self._live.set()
                    self._tried.set()
                    for run_id in run_ids:
                        for ring in self._rings.get(run_id, ()):
                            ring.set()
            except Exception as exc:
                log.warning("live event feed stopped (%s); streams poll the store meanwhile", exc)
            self._live.clear()
            self._tried.set()
            self._ring_all()  # whatever the feed missed, the streams' next reads find
            await asyncio.sleep(self._retry_seconds)

    def _ring_all(self) -> None:
        for rings in self._rings.values():
            for ring in rings:
                ring.set()
