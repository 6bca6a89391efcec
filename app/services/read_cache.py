"""Answers to reads, kept while the store's change count for what they show stands.

A run's detail is a function of the run and its node runs, and a page of a workflow's
runs of those runs and theirs; the store counts every write to them
(`Store.run_changes`, `Store.workflow_run_changes`; triggers on SQLite). A read takes
the count first (one indexed row) and, when it has not moved, answers with the body it
serialised last time: no run, definition snapshot or node run parsed, no model built or
dumped. The count is read before the data, so a write landing in between makes the next
read miss; it never passes old data off as new. Stores that keep no counts (MongoDB)
answer every read afresh.

An answer is kept with what it shows (`Shown`: the workflow whose ACL guards it, the
rule of its route, how to count its changes and how to build it again), so the read lane
(app/read_lane.py) can check it again and answer before routing, afresh if need be.

One per API process, bounded in bytes (TRELLIS_READ_CACHE_BYTES; 0 turns it off), the
least recently used answer dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

from app.auth.guard import Rule


@dataclass(frozen=True)
class Shown:
    """What a kept answer shows and who may see it: enough to answer it again without its
    route, after the same checks."""

    read: str  # which read it is ("run_detail", "run_list"), for the metrics
    workflow_id: str  # the workflow whose ACL guards it
    rule: Rule  # the scope and permission its route requires
    changes: Callable[[], Awaitable[int | None]]  # its change count, read afresh
    view: str  # what of the counted thing it shows (the ETag's last part)
    route: object  # the route that answered it (the request metrics' label)
    # The route's build: the answer afresh, from what the path and query named and
    # nothing of the caller's (the lane calls it only after the route's checks).
    build: Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class Kept:
    count: int  # the change count it was read at
    body: bytes
    shown: Shown | None


class ReadCache:
    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._answers: OrderedDict[Hashable, Kept] = OrderedDict()

    async def answer(
        self,
        key: Hashable,
        count: int | None,
        build: Callable[[], Awaitable[bytes]],
        shown: Shown | None = None,
    ) -> tuple[bytes, bool]:
        """The body kept for `key` at `count`, or `build()`'s (then kept at `count`); and
        whether it was built now (for the metrics)."""
        if count is None or not self._max_bytes:
            return await build(), True
        kept = self.kept(key)
        if kept is not None and kept.count == count:
            return kept.body, False
        body = await build()
        self._keep(key, Kept(count, body, shown))
        return body, True

    def kept(self, key: Hashable) -> Kept | None:
        """The answer kept for `key`, at whatever count it was read."""
        kept = self._answers.get(key)
        if kept is not None:
            self._answers.move_to_end(key)
        return kept

    def _keep(self, key: Hashable, kept: Kept) -> None:
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old.body)
        if len(kept.body) > self._max_bytes:
            return
        self._answers[key] = kept
        self._bytes += len(kept.body)
        while self._bytes > self._max_bytes:
            _, dropped = self._answers.popitem(last=False)
            self._bytes -= len(dropped.body)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._answers)
