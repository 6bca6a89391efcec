"""A write retried while the store cannot take it for now (`StoreUnavailable`: a lock held
past its timeout, a full disk, a server away), backing off from 0.2 s to 2 s: for writes
whose failure would make Temporal do the work again (a step's end, an activity's result)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from activities.store.base import StoreUnavailable

FIRST_SECONDS, MAX_SECONDS = 0.2, 2.0

log = logging.getLogger("trellis.store")


async def while_unavailable(
    write: Callable[[], Awaitable[Any]],
    what: str,
    *,
    patience: float | None = None,
    between: Callable[[], None] = lambda: None,
) -> None:
    """`write()` until it lands; after `patience` seconds of waits (None: no bound) the
    store's error is raised. `between` runs before each wait (a heartbeat)."""
    delay, waited = FIRST_SECONDS, 0.0
    while True:
        try:
            await write()
            return
        except StoreUnavailable as exc:
            if patience is not None and waited >= patience:
                raise
            log.warning("store unavailable, retrying %s in %.1fs: %s", what, delay, exc)
        between()
        await asyncio.sleep(delay)
        waited += delay
        delay = min(delay * 2, MAX_SECONDS)
