"""The run's outbox: read-model writes queued by the workflow and written in batches.

Writes wait until the run is about to block, until many have queued, or until they are
half a second old by the steps' clock; a local activity then writes them in order, in
one store transaction. Also the run's causal clock and its history-length estimate.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import (
        RECORD_BATCH,
        NodeRunProjection,
        ProjectionBatch,
        RunProjection,
    )

PROJECTION_TIMEOUT = timedelta(seconds=30)
# The outbox is written when the run blocks, or at this many writes, or when its oldest
# write is this old (by the steps' clock).
FLUSH_AT_WRITES = 200
FLUSH_AFTER = timedelta(milliseconds=500)
# History events an operation adds, for the history budget (a marker; schedule/start/
# complete plus a workflow task).
LOCAL_ACTIVITY_EVENTS = 1
ACTIVITY_EVENTS = 6


class RunOutbox:
    def __init__(self) -> None:
        # An estimate of this run's history length: local activities run inside one
        # workflow task, so the server's count lags far behind while they do.
        self._events = 3
        # Read-model writes not yet sent, in order ("r"/"n" per write), and counters.
        self._outbox_runs: list[RunProjection] = []
        self._outbox_nodes: list[NodeRunProjection] = []
        self._order = ""
        self._queued = 0
        self._flushed = 0
        self._clock: datetime | None = None
        self._oldest_queued: datetime | None = None
        self._want_flush = False
        self._closing = False
        self._flusher: asyncio.Task[None]

    def _enqueued(self, kind: str) -> None:
        if not self._order:
            self._oldest_queued = self._clock
        self._order += kind
        self._queued += 1

    def _flush_due(self) -> bool:
        if not self._order:
            return False
        if self._want_flush or len(self._order) >= FLUSH_AT_WRITES:
            return True
        # A long chain of quick local steps still shows up within FLUSH_AFTER.
        oldest, latest = self._oldest_queued, self._clock
        return oldest is not None and latest is not None and latest - oldest > FLUSH_AFTER

    async def _flush_forever(self) -> None:
        """Write what the run queued, in order, one local activity per batch.

        Writes wait in the outbox until the run is about to block (a remote step, a gate,
        a pause, the end of a parallel branch or of the run), until many have queued, or
        until they are FLUSH_AFTER old; a run of quick steps then costs one write, not one
        per step.
        """
        while True:
            await workflow.wait_condition(lambda: self._closing or self._flush_due())
            if self._closing:
                return
            await self._write_outbox()

    async def _write_outbox(self) -> None:
        """Write everything queued now as one batch, in order."""
        batch = ProjectionBatch(
            runs=self._outbox_runs, node_runs=self._outbox_nodes, order=self._order
        )
        upto = self._queued
        self._outbox_runs, self._outbox_nodes, self._order = [], [], ""
        self._want_flush = False
        self._events += LOCAL_ACTIVITY_EVENTS
        await workflow.execute_local_activity(
            RECORD_BATCH, batch, start_to_close_timeout=PROJECTION_TIMEOUT
        )
        self._flushed = upto

    async def _close_outbox(self, flusher: asyncio.Task[None]) -> None:
        """Stop the flusher (after the batch it is writing) and write the rest inline.

        Nothing may schedule a local activity once the run returns: completing the
        workflow must be its last command.
        """
        self._closing = True
        await flusher
        if self._order:
            await self._write_outbox()

    def _request_flush(self) -> None:
        """Write the outbox now, beside whatever the run does next (it is about to block)."""
        if self._order:
            self._want_flush = True

    async def _drain(self) -> None:
        """Write everything queued so far before going on (the run is about to block)."""
        target = self._queued
        if self._flushed < target:
            self._want_flush = True
            await workflow.wait_condition(lambda: self._flushed >= target)

    def _now(self) -> str:
        return workflow.now().isoformat().replace("+00:00", "Z")

    def _stamp(self) -> str:
        """A timestamp for a record the workflow writes, never before one already seen.

        workflow.now() is the workflow task's start; steps run (as local activities)
        after it, so a container recorded after a step would sort before it. Taking the
        later of the two, plus a microsecond, keeps every record in causal order.
        """
        now = workflow.now()
        if self._clock is not None and now <= self._clock:
            now = self._clock + timedelta(microseconds=1)
        self._clock = now
        return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def _observe(self, timestamp: str | None) -> None:
        """Note a time a step reported (recorded in history, so replay sees the same)."""
        if timestamp:
            seen = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
            if self._clock is None or seen > self._clock:
                self._clock = seen

    # -- node runs ----------------------------------------------------------
