"""A schedule's firings' own large payloads, and those a delete handed over, deleted by the
reconciler once Temporal has closed the workflow that may read them, whether or not run
retention is on (they are garbage either way).

Each firing is a small workflow (temporal_workflows/schedule_trigger.py) whose activity's
input carries the schedule's initial input: over the offload threshold it is stored anew
for every firing (its run id differs), referred to by the firing's workflow, which is no
run, so no run's delete takes it (a 15 s schedule with a 300 KB input grew the store by
~1.7 GB a day). The run a firing starts keeps its own copy, under its run id; the
schedule's own argument stays while the schedule does, and a schedule's delete hands it
here (`Store.end_schedule_payloads`), as an update the copies it replaced
(`Store.replace_schedule_payloads`) and a workflow's delete its runs' (`delete_workflow`).

A reference goes once older than `keep_for` and its workflow (the reference's id) is closed
or unknown to Temporal: a firing's activity held over an hour in a backed-up task queue, or
a deleted workflow's run still closing, keeps its payloads (decoded again on replay) and is
looked at again the next pass. Temporal unreachable: the pass stops and deletes nothing.

A worker before firings' references were recorded (SQLite schema version 11, still running
in a rolling deploy after the migration, or any before it) wrote a firing's as a run's,
with no time made; no run has a firing's id, so no run's delete takes them. Each pass hands
those to itself as made now (`Store.adopt_older_firing_refs`): they go as any firing's,
`keep_for` after the pass that first found them.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.metrics import RunMetrics
from activities.store.base import Store
from app.sweep_pacing import Budget, SweepPacing

log = logging.getLogger("trellis.reconciler")
# Before Temporal is asked at all: a firing's workflow is mostly closed within ~20 minutes
# of its references (renewed by each put), so most are asked about once.
KEEP_FOR = timedelta(hours=1)
EVERY = timedelta(minutes=10)
# References per write, as the run retention's runs.
BATCH = 500
# Workflows described per batch (one call each): a pass describes this many at a time
# while its budget lasts.
HOLDERS = 100
PASS_SECONDS = 2.0


class FiringPayloads:
    def __init__(
        self,
        client: Client,
        store: Store,
        metrics: RunMetrics,
        keep_for: timedelta = KEEP_FOR,
        every: timedelta = EVERY,
    ) -> None:
        self._client = client
        self._store = store
        self._metrics = metrics
        self._keep_for = keep_for
        # The first sweep one `every` after the start: a firing that waited for a worker
        # (none was up) has taken its activity by then.
        self._pacing = SweepPacing(every, at_start=False)
        # The last workflow id looked at: the next batch starts after it, so workflows still
        # open never hold back those after them ("": from the first).
        self._after = ""

    async def run_if_due(self, budget: float = PASS_SECONDS) -> int:
        """The payloads it deleted in this pass, sweeping for `budget` seconds at most, when
        it last swept `every` ago or left references due; none otherwise."""
        if not self._pacing.due():
            return 0
        deleted, self._pacing.more = await self.sweep(budget)
        return deleted

    async def sweep(self, budget: float | None = None) -> tuple[int, bool]:
        """Delete the firings' references made before now less `keep_for` whose workflow
        Temporal has closed, with the payloads nothing else refers to, for `budget` seconds at
        most (None: through every workflow); how many payloads it deleted, and whether
        workflows are left to look at."""
        cutoff = datetime.now(UTC) - self._keep_for
        deleted = 0
        spent = Budget(budget).spent
        # An older worker's firings' references become this sweep's, made now (after the
        # cutoff): the first pass that finds one records it, a later one deletes it.
        while await self._store.adopt_older_firing_refs(BATCH) == BATCH and not spent():
            pass
        while True:
            holders = await self._store.firing_payload_holders(cutoff, self._after, HOLDERS)
            closed = [workflow_id for workflow_id in holders if await self._closed(workflow_id)]
            deleted += await self._delete(cutoff, closed)
            more = len(holders) == HOLDERS
            self._after = holders[-1] if more else ""
            if not more or spent():
                break
        if deleted:
            log.info(
                "deleted %d large payload(s) of schedule firings made before %s",
                deleted,
                cutoff.isoformat(),
            )
        return deleted, more

    async def _delete(self, cutoff: datetime, workflow_ids: list[str]) -> int:
        deleted = 0
        while workflow_ids:
            batch = await self._store.delete_firing_payloads(cutoff, BATCH, workflow_ids)
            self._metrics.payloads_deleted.inc(batch.payloads)
            deleted += batch.payloads
            if batch.refs < BATCH:
                break
        return deleted

    async def _closed(self, workflow_id: str) -> bool:
        """Whether Temporal has closed this workflow or does not know it; any other failure
        (an outage) is raised: nothing is deleted until it answers."""
        try:
            described = await self._client.get_workflow_handle(workflow_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return True
            raise
        return described.status not in (None, WorkflowExecutionStatus.RUNNING)
