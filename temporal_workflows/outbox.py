"""The run's outbox: read-model writes queued by the workflow and written in batches.

Writes wait until the run is about to block, until many have queued, or until they are
half a second old by the run's clock; a local activity then writes them in order, in
one store transaction. A run of quick steps costs one store write, not one per step.

A step's activity may carry the queued writes instead (`hand_off`) and write them
before its call: then the workflow task that starts the step (a run's first, say, or the
next of a loop whose body evaluates a step inline) completes at once, with no local
activity holding it open. Until that step reports them written, every later write of the
outbox writes them again first, so order holds whichever lands first. A retried step
writes them again, maybe after later writes: run writes are applied only over an older
rev; node-run writes are handed only when settled: nothing written of their node run
later shares their rev (an inline step's end; a container's start when it has no gate),
so the repeat is refused. Events are keyed, so each is logged once.

Every write has a sequence number, counted from the execution's first write in the order
the workflow queued them (deterministic, so a workflow task that runs again numbers its
writes as its first attempt did); a batch carries its first write's. With the Temporal
run id and the event's content they key the events the batch logs (activities/
projections.py): the store logs a keyed event once, whichever of the step, the outbox
or a task run again writes it.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.clock import RunClock
    from temporal_workflows.contracts import (
        RECORD_BATCH,
        NodeRunProjection,
        ProjectionBatch,
        RunProjection,
    )
    from temporal_workflows.history import LOCAL_ACTIVITY_EVENTS, HistoryBudget

PROJECTION_TIMEOUT = timedelta(seconds=30)
# The outbox is written when the run blocks, or at this many writes, or when its oldest
# write is this old (by the run's clock).
FLUSH_AT_WRITES = 200
FLUSH_AFTER = timedelta(milliseconds=500)
# A hand-off is at most this large (a step's input is kept in the run's history).
HAND_OFF_MAX_BYTES = 8 * 1024


class Outbox:
    def __init__(
        self, clock: RunClock, history: HistoryBudget, hand_offs: bool, hand_off_nodes: bool
    ) -> None:
        self._clock = clock
        self._history = history
        # False for a run started before hand-offs, or before they carried node runs (it
        # replays as it ran).
        self._hand_offs = hand_offs
        self._hand_off_nodes = hand_offs and hand_off_nodes
        # Writes not yet sent, in order ("r"/"n" per write), and counters.
        self._runs: list[RunProjection] = []
        self._nodes: list[NodeRunProjection] = []
        self._unsettled = 0  # queued node-run writes that may not be handed
        self._order = ""
        self._queued = 0
        # The sequence number of the first write not yet sent (writes are numbered from 0).
        self._first_queued = 0
        self._flushed = 0
        self._oldest_queued: datetime | None = None
        self._want_flush = False
        self._closing = False
        self._flusher: asyncio.Task[None] | None = None
        # Handed to a step, not yet known written (at most one), and a batch being written.
        self._handed: ProjectionBatch | None = None
        self._handed_upto = 0
        self._writing = False

    def start(self) -> None:
        """Start the one flusher (two could reorder batches)."""
        self._flusher = asyncio.create_task(self._flush_forever())

    def add_run(self, projection: RunProjection) -> None:
        self._runs.append(projection)
        self._enqueued("r")

    def add_node(self, projection: NodeRunProjection, settled: bool) -> None:
        """Queue a node-run write; `settled` when nothing written of that node run later
        shares its rev (a repeat of it landing late is refused), so it may be handed."""
        self._nodes.append(projection)
        self._unsettled += not settled
        self._enqueued("n")

    def request_flush(self) -> None:
        """Write the outbox now, beside whatever the run does next (it is about to block)."""
        if self._order:
            self._want_flush = True

    def flush_in_this_task(self) -> None:
        """What is queued must be in the store when this workflow task completes (an
        update's answer waits for it): never handed to the next step, which may start
        later. A run from before hand-offs keeps the flushes it had."""
        if self._hand_offs:
            self.request_flush()

    def backlogged(self) -> bool:
        """A full batch is queued: the run should let it be written before going on."""
        return len(self._order) >= FLUSH_AT_WRITES

    def hand_off(self) -> ProjectionBatch | None:
        """The queued writes, for the step about to start to write before its call; None
        when they must go the usual way (then `request_flush`).

        Only writes a second landing cannot undo: run writes (each has a rev of its own)
        and settled node-run writes (a gate's writes share a rev, so an old one landing
        again would reopen it); only small ones; and only when nothing written earlier
        may still land after them (no batch in flight, none handed unconfirmed) or is
        asked for now.
        """
        if (
            not self._hand_offs
            or not self._order
            or self._handed is not None
            or self._writing
            or self._want_flush
        ):
            return None
        if self._nodes and (self._unsettled or not self._hand_off_nodes):
            return None
        size = len(
            json.dumps(
                [[p.changes, p.event] for p in self._runs]
                + [[n.record, n.events] for n in self._nodes],
                default=str,
            )
        )
        if size > HAND_OFF_MAX_BYTES:
            return None
        self._handed = ProjectionBatch(
            runs=self._runs, node_runs=self._nodes, order=self._order, first_seq=self._first_queued
        )
        self._handed_upto = self._queued
        self._runs, self._nodes, self._order = [], [], ""
        return self._handed

    @property
    def handed(self) -> ProjectionBatch | None:
        """What a step was handed and has not yet reported written. A step starting
        meanwhile may write it again: a repeat lands once, as a retried step's does."""
        return self._handed

    def confirm(self, handed: ProjectionBatch) -> None:
        """The step wrote what it was handed."""
        if handed is self._handed:
            self._handed = None
            self._flushed = max(self._flushed, self._handed_upto)

    async def drain(self) -> None:
        """Write everything queued so far before going on."""
        target = self._queued
        if self._flushed < target:
            self._want_flush = True
            await workflow.wait_condition(lambda: self._flushed >= target)

    async def close(self, ending: bool = False) -> None:
        """Stop the flusher (after the batch it is writing) and write the rest inline.

        Nothing may schedule a local activity once the run returns: completing the
        workflow must be its last command. When the run is `ending`, a cancel that comes
        meanwhile does not cut these last writes off (`_through_cancel`): the run ends as
        it was ending. Before a continue-as-new it does, so the run ends cancelled.
        """
        self._closing = True
        if self._flusher is not None:
            await (_through_cancel(self._flusher) if ending else self._flusher)
        if self._order or self._handed is not None:
            await self._write(last=ending)

    def _enqueued(self, kind: str) -> None:
        if not self._order:
            self._oldest_queued = self._clock.latest
            self._first_queued = self._queued
        self._order += kind
        self._queued += 1

    def _flush_due(self) -> bool:
        if self._want_flush and self._handed is not None:
            return True  # a drain: what a step was handed counts once written
        if not self._order:
            return False
        if self._want_flush or len(self._order) >= FLUSH_AT_WRITES:
            return True
        # A long chain of quick steps still shows up within FLUSH_AFTER.
        oldest, latest = self._oldest_queued, self._clock.latest
        return oldest is not None and latest is not None and latest - oldest > FLUSH_AFTER

    async def _flush_forever(self) -> None:
        while True:
            await workflow.wait_condition(lambda: self._closing or self._flush_due())
            if self._closing:
                return
            await self._write()

    async def _write(self, last: bool = False) -> None:
        """Write everything queued now as one batch, in order, after what a step was
        handed and may not have written yet."""
        handed = self._handed
        batch = ProjectionBatch(
            runs=self._runs,
            node_runs=self._nodes,
            order=self._order,
            first_seq=self._first_queued,
        )
        if handed is not None:
            # What was queued since the hand-off follows it without a gap (no write is
            # sent while a hand-off is unconfirmed, bar this one), so numbering runs on.
            batch = ProjectionBatch(
                runs=[*handed.runs, *batch.runs],
                node_runs=[*handed.node_runs, *batch.node_runs],
                order=handed.order + batch.order,
                first_seq=handed.first_seq,
            )
        upto = self._queued
        self._runs, self._nodes, self._order, self._unsettled = [], [], "", 0
        self._want_flush = False
        self._history.add(LOCAL_ACTIVITY_EVENTS)
        self._writing = True
        try:
            written = workflow.start_local_activity(
                RECORD_BATCH, batch, start_to_close_timeout=PROJECTION_TIMEOUT
            )
            await (_through_cancel(written) if last else written)
        finally:
            self._writing = False
        if handed is not None:
            self.confirm(handed)
        self._flushed = max(self._flushed, upto)


# Runs whose last writes a cancel cut off before this replay as they ran (`_through_cancel`).
LAST_WRITES_OUTLIVE_CANCEL_PATCH = "run-end-written-through-a-cancel"


async def _through_cancel(work: asyncio.Future[Any]) -> Any:
    """Await the run's last writes to their end, whatever cancel comes meanwhile: a cancel
    that reached the run while its end was being written (a decision had ended it) cut
    the write off, and the store kept the run open for good while Temporal said
    cancelled. The run then ends as it was ending."""
    while True:
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if work.done() or not workflow.patched(LAST_WRITES_OUTLIVE_CANCEL_PATCH):
                work.cancel()  # as before: the cancel reaches the write
                raise
