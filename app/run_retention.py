"""Run retention (TRELLIS_RUN_RETENTION_DAYS): the reconciler deletes from the store the runs
that ended longer ago than the retention, with their node runs and events, at the worker's
start and then every `EVERY`.

Only runs in a terminal status (completed, failed, cancelled) go; an open one (pending,
running, paused, waiting at a gate) stays whatever its age. They go `BATCH` runs a write
at most, and on SQLite no more than about `DELETE_ROWS` rows with their node runs and
events (sqlite.py), so every other write (each step of each run) waits for one short
batch at most. Several workers sweep at once harmlessly: the store deletes a run only
while it is due, once. Payloads stay (no record says which runs use one), and Temporal
keeps closed workflows for its namespace's own retention, apart from this one.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

from activities.metrics import RunMetrics
from activities.store.base import Store

log = logging.getLogger("trellis.reconciler")
EVERY = timedelta(minutes=10)
# Runs deleted per write (as a workflow's delete deletes its runs).
BATCH = 500


class RunRetention:
    def __init__(
        self, store: Store, retention: timedelta, metrics: RunMetrics, every: timedelta = EVERY
    ) -> None:
        self._store = store
        self._retention = retention
        self._metrics = metrics
        self._every = every.total_seconds()
        # Monotonic time of the last sweep (None: at the first pass).
        self._swept_at: float | None = None

    async def run_if_due(self) -> int:
        """The runs it deleted; none when it swept less than `every` ago."""
        now = time.monotonic()
        if self._swept_at is not None and now - self._swept_at < self._every:
            return 0
        deleted = await self.sweep()
        self._swept_at = now
        return deleted

    async def sweep(self) -> int:
        """Delete every run that ended before now less the retention; how many it deleted."""
        cutoff = datetime.now(UTC) - self._retention
        deleted, oldest = 0, None
        while True:
            batch = await self._store.delete_ended_runs(cutoff, BATCH)
            # Counted per batch: a sweep cut short (the store lost) counts what it deleted.
            self._metrics.runs_deleted.inc(batch.deleted)
            deleted += batch.deleted
            if batch.oldest_end is not None and (oldest is None or batch.oldest_end < oldest):
                oldest = batch.oldest_end
            if not batch.more:
                break
        if deleted:
            log.info(
                "run retention deleted %d run(s) that ended before %s (the oldest ended %s)",
                deleted,
                cutoff.isoformat(),
                oldest.isoformat() if oldest else "?",
            )
        return deleted
