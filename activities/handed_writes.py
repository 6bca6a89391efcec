"""The run's queued writes a step was handed, written once per worker however many carry them.

The children a run's first workflow task starts together each carry the same batch (the
run's start, their parent's); each must see it in the store before writing its own node
run. The first to ask writes it; the others in this process wait for that write rather
than repeat it (a transaction each, refused or ignored). A write that failed is not
remembered: each of its waiters then leaves the batch to the workflow's outbox.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable

# Batches remembered as written (a batch is carried only while its workflow task's steps
# start, so a few per run in flight are plenty).
REMEMBERED = 1024


class HandedWrites:
    def __init__(self) -> None:
        self._writes: OrderedDict[Hashable, asyncio.Future[None]] = OrderedDict()

    async def write_once(self, key: Hashable | None, write: Callable[[], Awaitable[None]]) -> None:
        """`write()`, unless this process wrote (or is writing) the batch `key` names;
        raises what the write raised. No key: written every time."""
        if key is None:
            await write()
            return
        written = self._writes.get(key)
        if written is None:
            written = asyncio.ensure_future(write())
            self._writes[key] = written
            while len(self._writes) > REMEMBERED:
                self._writes.popitem(last=False)
            written.add_done_callback(lambda done: self._forget_failed(key, done))
        # Shielded: a step cancelled while it waits leaves the write to the others.
        await asyncio.shield(written)

    def _forget_failed(self, key: Hashable, done: asyncio.Future[None]) -> None:
        if (done.cancelled() or done.exception() is not None) and self._writes.get(key) is done:
            del self._writes[key]
