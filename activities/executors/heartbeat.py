"""Heartbeat a step while it waits on something slow (Temporal notices dead workers by it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from activities.executors.base import StepCall

HEARTBEAT_SECONDS = 1.0


@contextlib.asynccontextmanager
async def heartbeating(
    call: StepCall, detail: str, every: float = HEARTBEAT_SECONDS
) -> AsyncIterator[None]:
    """Call `call.heartbeat(detail)` now and every `every` seconds until the block ends."""

    async def beat() -> None:
        while True:
            call.heartbeat(detail)
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
