"""Work on one key (a workflow's saves) one at a time, per process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Turns:
    """One turn at a time per key, in this process; a key's lock goes with its last user.

    A turn is waited for TURN_WAIT_SECONDS at most, then taken without: a save that
    validates against a hanging MCP server (rediscovery) must not hold every other save,
    toggle and delete of its workflow; the compare-and-write retry still orders them."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiting[key] = self._waiting.get(key, 0) + 1
        held = False
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lock.acquire(), TURN_WAIT_SECONDS)
                held = True
            yield
        finally:
            if held:
                lock.release()
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key], self._locks[key]


TURN_WAIT_SECONDS = 2.0
