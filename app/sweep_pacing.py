"""When the reconciler's sweeps (run retention, the firings' payloads) run, and for how long.

A sweep is due every `every`; one pass sweeps for a budget of seconds at most, and a pass
that left work due makes the next pass (the reconciler's next, seconds later) go on at
once, so a backlog goes over several short passes with reconciliation in between. A pass
that fails (raises) changes neither: a sweep it began waits for its next time, a
continuation is tried again next pass.
"""

from __future__ import annotations

import time
from datetime import timedelta


class SweepPacing:
    def __init__(self, every: timedelta, *, at_start: bool) -> None:
        self._every = every.total_seconds()
        # Monotonic time the last whole sweep began (None: none yet, the first is due at
        # once), and whether the last pass left work for the next.
        self._swept_at = None if at_start else time.monotonic()
        self.more = False

    def due(self) -> bool:
        """Whether a pass is due now; one that is no continuation begins a whole sweep."""
        now = time.monotonic()
        if self.more:
            return True
        if self._swept_at is not None and now - self._swept_at < self._every:
            return False
        self._swept_at = now
        return True


class Budget:
    """A pass's seconds (None: no bound), from its start."""

    def __init__(self, seconds: float | None) -> None:
        self._stop = None if seconds is None else time.monotonic() + seconds

    def spent(self) -> bool:
        return self._stop is not None and time.monotonic() >= self._stop
