"""Heartbeat a step while it waits on something slow (Temporal notices dead workers by it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from activities.executors.base import StepCall

HEARTBEAT_SECONDS = 1.0


@contextlib.asynccontextmanager
async def heartbeating(
    call: StepCall,
    detail: Any,
    every: float = HEARTBEAT_SECONDS,
    *,
    on_beat: Callable[[], None] | None = None,
) -> AsyncIterator[None]:
    """Call `call.heartbeat(detail)` every `every` seconds until the block ends (a dict
    `detail` is sent as it is at each beat: what the executor added to it meanwhile too),
    and `on_beat()` after it: what must stop when the step stops beating.

    Not at once: Temporal sends an activity's first heartbeat to the server straight away,
    so beating on entry cost every call a server round trip beside its own work (~1 ms of
    each A2A call on the benchmark); a call that ends within the first interval needs none.
    """

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            call.heartbeat(detail)
            if on_beat is not None:
                on_beat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
