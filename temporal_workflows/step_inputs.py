"""The step inputs in flight at once, bounded in bytes, so a wide fan-out over a large run
context fits in the workflow tasks that start it.

Every step's activity input carries the run context (its input, previous_step_content,
…), inline when under the offload size, and one workflow task schedules every step its
branches start: a map of 500 items over a 10 KB input put 5 MB in one task's completion,
past gRPC's 4 MiB, and Temporal terminated the run (GrpcMessageTooLarge).

So a step reserves its input's size, as the payload converter encodes it (a claim's size
when it will be offloaded), and what its schedule command carries besides, before its
activity is scheduled; the activity's end, however it ends, gives them back. A step that
does not fit waits, first come first served. A lone step always fits: an inline input is
under the offload size (≤ 1 MiB). The steps in flight are also kept under Temporal's
2,000 pending activities a workflow (nested fan-outs multiply).

Cost: a step alone in flight (every step of a sequential run) is not measured; a step
starting beside others is encoded once more (the SDK encodes it again to schedule it),
and measures the lone step it found in flight: each input is measured at most once.

Sizes decide which steps one task starts, so they are part of the command sequence: a
run replays as it ran while its inputs encode as they did (as the outbox's hand-off,
decided by size too).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import StepInput

# The starter's budget (RunInput.step_input_bytes): half gRPC's 4 MiB a request, room for
# the task's other commands.
IN_FLIGHT_BYTES = 2 * 1024 * 1024
# Half Temporal's limit of pending activities per workflow.
IN_FLIGHT_STEPS = 1_000
# What a schedule command carries besides its input and summary (ids, activity type, task
# queue, timeouts, retry policy), and an offloaded input's claim: both generously.
COMMAND_BYTES = 512
CLAIM_BYTES = 512


@dataclass(eq=False)
class _Hold:
    request: StepInput
    summary: str
    size: int | None = None  # None: not measured (it started alone)
    admitted: asyncio.Future[None] | None = None


class StepInputs:
    """The workflow's steps in flight and the bytes their inputs take (one per run)."""

    def __init__(self, most_bytes: int | None, offload_bytes: int | None) -> None:
        # None: a run started before the bound schedules as it did.
        self._most = most_bytes
        self._offload = offload_bytes
        self._count = 0
        self._bytes = 0
        self._unmeasured: _Hold | None = None
        self._waiting: deque[_Hold] = deque()

    @asynccontextmanager
    async def held(
        self, request: StepInput, summary: str, on_wait: Callable[[], None]
    ) -> AsyncIterator[None]:
        """Hold the request's bytes while its activity runs; wait first while they do not
        fit (`on_wait` is told: the run is about to block)."""
        if self._most is None:
            yield
            return
        hold = _Hold(request, summary)
        await self._take(hold, on_wait)
        try:
            yield
        finally:
            self._release(hold)

    async def _take(self, hold: _Hold, on_wait: Callable[[], None]) -> None:
        if self._count == 0 and not self._waiting:
            self._unmeasured = hold
            self._count += 1
            return
        self._measure(hold)
        if self._unmeasured is not None:
            self._measure(self._unmeasured)
            self._bytes += self._unmeasured.size or 0
            self._unmeasured = None
        if not self._waiting and self._fits(hold):
            self._admit(hold)
            return
        admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        hold.admitted = admitted
        self._waiting.append(hold)
        on_wait()
        try:
            await admitted
        except asyncio.CancelledError:
            if admitted.cancelled():  # cancelled while waiting
                if hold in self._waiting:
                    self._waiting.remove(hold)
            else:  # admitted, then cancelled before it went on
                self._release(hold)
            raise

    def _fits(self, hold: _Hold) -> bool:
        if self._count == 0:
            return True
        assert self._most is not None and hold.size is not None
        return self._count < IN_FLIGHT_STEPS and self._bytes + hold.size <= self._most

    def _admit(self, hold: _Hold) -> None:
        self._count += 1
        self._bytes += hold.size or 0

    def _release(self, hold: _Hold) -> None:
        self._count -= 1
        if hold is self._unmeasured:
            self._unmeasured = None
        else:
            self._bytes -= hold.size or 0
        while self._waiting and self._fits(self._waiting[0]):
            head = self._waiting.popleft()
            if head.admitted is None or head.admitted.done():
                continue  # cancelled while waiting: its own task drops it
            self._admit(head)
            head.admitted.set_result(None)

    def _measure(self, hold: _Hold) -> None:
        if hold.size is not None:
            return
        [payload] = workflow.payload_converter().to_payloads([hold.request])
        size = payload.ByteSize()
        # Offloaded at the threshold and above (the SDK's external storage).
        if self._offload is not None and size >= self._offload:
            size = CLAIM_BYTES
        hold.size = size + len(hold.summary.encode()) + COMMAND_BYTES
