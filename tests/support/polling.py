"""Waiting for something the system does on its own time (a worker, a timer, a schedule)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def eventually(check: Callable[[], Any], within: float = 10.0, every: float = 0.05) -> Any:
    """Call `check` (sync or async) until it returns something truthy and return that;
    fail after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"not true within {within} s: {check}")
        await asyncio.sleep(every)
