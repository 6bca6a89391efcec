"""A schedule's firings' own large payloads, deleted by the reconciler once each firing is
surely over, whether or not run retention is on (they are garbage either way).

Each firing is a small workflow (temporal_workflows/schedule_trigger.py) whose activity's
input carries the schedule's initial input: over the offload threshold it is stored anew
for every firing (its run id differs), referred to by the firing's workflow, which is no
run, so no run's delete takes it (a 15 s schedule with a 300 KB input grew the store by
~1.7 GB a day). The run a firing starts keeps its own copy, under its run id; the
schedule's own argument stays while the schedule does, and a schedule's delete hands it
here (`Store.end_schedule_payloads`).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

from activities.metrics import RunMetrics
from activities.store.base import Store

log = logging.getLogger("trellis.reconciler")
# A firing's activity is tried 20 times at most, 30 s each (START_TIMEOUT) with backoff up
# to 30 s: its workflow is closed within ~20 minutes of its references, renewed by each
# put. An hour leaves room for a worker restarted in between.
KEEP_FOR = timedelta(hours=1)
EVERY = timedelta(minutes=10)
# References per write, as the run retention's runs.
BATCH = 500
PASS_SECONDS = 2.0


class FiringPayloads:
    def __init__(
        self,
        store: Store,
        metrics: RunMetrics,
        keep_for: timedelta = KEEP_FOR,
        every: timedelta = EVERY,
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._keep_for = keep_for
        self._every = every.total_seconds()
        # Monotonic time the last whole sweep began: the first is one `every` after the
        # start, so a firing that waited for a worker (none was up) has taken its activity
        # by then. Whether the last pass left due references.
        self._swept_at = time.monotonic()
        self._more = False

    async def run_if_due(self, budget: float = PASS_SECONDS) -> int:
        """The payloads it deleted in this pass, sweeping for `budget` seconds at most, when
        it last swept `every` ago or left references due; none otherwise."""
        now = time.monotonic()
        if not self._more and now - self._swept_at < self._every:
            return 0
        if not self._more:
            self._swept_at = now
        deleted, self._more = await self.sweep(budget)
        return deleted

    async def sweep(self, budget: float | None = None) -> tuple[int, bool]:
        """Delete the firings' references made before now less `keep_for`, with the payloads
        nothing else refers to, for `budget` seconds at most (None: until none is left); how
        many payloads it deleted, and whether references are left."""
        cutoff = datetime.now(UTC) - self._keep_for
        deleted = 0
        stop = None if budget is None else time.monotonic() + budget
        while True:
            batch = await self._store.delete_firing_payloads(cutoff, BATCH)
            self._metrics.payloads_deleted.inc(batch.payloads)
            deleted += batch.payloads
            more = batch.refs == BATCH
            if not more or (stop is not None and time.monotonic() >= stop):
                break
        if deleted:
            log.info(
                "deleted %d large payload(s) of schedule firings made before %s",
                deleted,
                cutoff.isoformat(),
            )
        return deleted, more
