"""Answers to reads, kept while the store's change count for what they show stands.

A run's detail is a function of the run and its node runs, and a page of a workflow's
runs of those runs and theirs; the store counts every write to them
(`Store.run_changes`, `Store.workflow_run_changes`; triggers on SQLite). A read takes
the count first (one indexed row) and, when it has not moved, answers with the body it
serialised last time: no run, definition snapshot or node run parsed, no model built or
dumped. The count is read before the data, so a write landing in between makes the next
read miss; it never passes old data off as new. Stores that keep no counts (MongoDB)
answer every read afresh.

One per API process, bounded in bytes (TRELLIS_READ_CACHE_BYTES; 0 turns it off), the
least recently used answer dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable


class ReadCache:
    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        # key -> (the change count it was read at, the body)
        self._answers: OrderedDict[Hashable, tuple[int, bytes]] = OrderedDict()

    async def answer(
        self, key: Hashable, count: int | None, build: Callable[[], Awaitable[bytes]]
    ) -> bytes:
        """The body kept for `key` at `count`, or `build()`'s (then kept at `count`)."""
        if count is None or not self._max_bytes:
            return await build()
        kept = self._answers.get(key)
        if kept is not None and kept[0] == count:
            self._answers.move_to_end(key)
            return kept[1]
        body = await build()
        self._keep(key, count, body)
        return body

    def _keep(self, key: Hashable, count: int, body: bytes) -> None:
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old[1])
        if len(body) > self._max_bytes:
            return
        self._answers[key] = (count, body)
        self._bytes += len(body)
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._answers.popitem(last=False)
            self._bytes -= len(dropped)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._answers)
