"""Run retention (TRELLIS_RUN_RETENTION_DAYS): the reconciler deletes from the store the runs
that ended longer ago than the retention, with their node runs, events and the large payloads
no other run uses, at the worker's start and then every `EVERY`.

Only runs in a terminal status (completed, failed, cancelled) go; an open one (pending,
running, paused, waiting at a gate) stays whatever its age. They go `BATCH` runs a write
at most, and on SQLite no more than about `DELETE_ROWS` rows with their node runs and
events (sqlite.py), so every other write (each step of each run) waits for one short
batch at most. Several workers sweep at once harmlessly: the store deletes a run only
while it is due, once. Temporal keeps closed workflows for its namespace's own retention,
apart from this one.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from activities.metrics import RunMetrics
from activities.store.base import Store
from app.sweep_pacing import Budget, SweepPacing

log = logging.getLogger("trellis.reconciler")
EVERY = timedelta(minutes=10)
# Runs deleted per write (as a workflow's delete deletes its runs).
BATCH = 500
# How long one reconciler pass sweeps: a backlog (retention turned on over a million ended
# runs) goes over several passes, each followed at once by the next, and reconciliation
# runs in between rather than waiting minutes.
PASS_SECONDS = 2.0


class RunRetention:
    def __init__(
        self, store: Store, retention: timedelta, metrics: RunMetrics, every: timedelta = EVERY
    ) -> None:
        self._store = store
        self._retention = retention
        self._metrics = metrics
        self._pacing = SweepPacing(every, at_start=True)

    async def run_if_due(self, budget: float = PASS_SECONDS) -> int:
        """The runs it deleted in this pass: sweeping for `budget` seconds at most, when it
        last swept `every` ago or left runs due; none otherwise."""
        if not self._pacing.due():
            return 0
        deleted, self._pacing.more = await self.sweep(budget)
        return deleted

    async def sweep(self, budget: float | None = None) -> tuple[int, bool]:
        """Delete the runs that ended before now less the retention, for `budget` seconds at
        most (None: until none is left); how many it deleted, and whether some are left."""
        cutoff = datetime.now(UTC) - self._retention
        deleted, payloads, oldest = 0, 0, None
        spent = Budget(budget).spent
        while True:
            batch = await self._store.delete_ended_runs(cutoff, BATCH)
            # Counted per batch: a sweep cut short (the store lost) counts what it deleted.
            self._metrics.runs_deleted.inc(batch.deleted)
            self._metrics.payloads_deleted.inc(batch.payloads)
            deleted += batch.deleted
            payloads += batch.payloads
            if batch.oldest_end is not None and (oldest is None or batch.oldest_end < oldest):
                oldest = batch.oldest_end
            if not batch.more or spent():
                break
        if deleted:
            log.info(
                "run retention deleted %d run(s) that ended before %s (the oldest ended %s)"
                " and %d large payload(s) no other run uses",
                deleted,
                cutoff.isoformat(),
                oldest.isoformat() if oldest else "?",
                payloads,
            )
        return deleted, batch.more
