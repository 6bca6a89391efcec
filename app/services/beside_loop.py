"""CPU-bound work run beside the API's event loop, one job at a time, never holding exit.

A definition's save checks its CEL expressions: seconds for a large one, during which the
event loop (every other request, probes included) waited. On a thread of its own the loop
goes on. Not a ThreadPoolExecutor: Python joins an executor's threads at exit, so an API
told to stop waited for a check nobody was waiting for any more (its request gone). These
threads are daemons, and the jobs share one lock (CEL's parser is one object per process).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_ONE_AT_A_TIME = threading.Lock()


async def beside_the_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a daemon thread, after any job before it; its result or its error."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the caller stopped waiting (its request went away)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        with _ONE_AT_A_TIME:
            if future.cancelled():
                return  # abandoned while it queued: nothing to check for
            try:
                result, error = fn(*args), None
            except Exception as exc:
                result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop has closed (the process is stopping)
            pass

    threading.Thread(target=work, name="beside-the-loop", daemon=True).start()
    return await future
