"""What counts toward TRELLIS_MAX_SCHEDULES_PER_WORKFLOW beside Temporal's list of a
workflow's schedules, which shows a create or a delete a moment late: this API process's
creates of the workflow still in flight, and the schedules it made in the last
`RECENT_SECONDS`, less those it deleted in that time (a delete at the bound, then a
create, was 409 while the list still showed the deleted one). Concurrent creates, each
counting before any was made, all passed the bound; so did a burst behind a lock given up
after a wait. Other processes' are not seen (docs/lineage-events-schedules.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

RECENT_SECONDS = 30.0


class ScheduleBound:
    def __init__(self) -> None:
        self._in_flight: dict[str, int] = {}
        self._recent: dict[str, dict[str, float]] = {}
        self._deleted: dict[str, float] = {}

    @contextlib.contextmanager
    def creating(self, workflow_id: str) -> Iterator[int]:
        """A create of the workflow's, in flight until the block ends; yields how many others
        were in flight before it (counted before its own look at the list)."""
        others = self._in_flight.get(workflow_id, 0)
        self._in_flight[workflow_id] = others + 1
        try:
            yield others
        finally:
            self._in_flight[workflow_id] -= 1
            if not self._in_flight[workflow_id]:
                del self._in_flight[workflow_id]

    def made(self, workflow_id: str, schedule_id: str) -> None:
        self._recent.setdefault(workflow_id, {})[schedule_id] = time.monotonic()

    def deleted(self, schedule_id: str) -> None:
        for made in self._recent.values():
            made.pop(schedule_id, None)
        self._deleted[schedule_id] = time.monotonic()

    def recently_deleted(self) -> set[str]:
        """The schedules this process deleted lately (of any workflow: ids are unique)."""
        since = time.monotonic() - RECENT_SECONDS
        for schedule_id in [s for s, at in self._deleted.items() if at < since]:
            del self._deleted[schedule_id]
        return set(self._deleted)

    def recently_made(self, workflow_id: str) -> set[str]:
        """The schedules this process made for the workflow lately (older ones, of every
        workflow, forgotten)."""
        since = time.monotonic() - RECENT_SECONDS
        for made_for in list(self._recent):
            made = self._recent[made_for]
            for schedule_id in [s for s, at in made.items() if at < since]:
                del made[schedule_id]
            if not made:
                del self._recent[made_for]
        return set(self._recent.get(workflow_id, {}))


# One per API process: every request's ScheduleService counts through it.
BOUND = ScheduleBound()
