"""Long chains of inline steps and containers' expressions are cut into slices of activations.

Inline steps (pure built-ins) run inside the workflow's activation, and an activation that
runs for 2 s is reported deadlocked and retried for ever. A chain of them used to end its
activation only at a full outbox batch (200 writes), and their expressions shared one
budget for the whole workflow task: a loop of ~1,700 inline transforms failed on that
budget, and 150 costly ones ran past 2 s on a loaded machine (the run stayed pending).
Now every STEPS_PER_SLICE inline steps in a row the run waits for its queued writes (a
local activity, which ends the activation), and the next slice's expressions draw on a
fresh share. Deterministic: a count, never a clock. Runs whose history has no
INLINE_SLICE_PATCH marker at a cut replay as they ran.

A slice also ends once its steps' outputs add up to SLICE_OUTPUT_BYTES of JSON: each
output is walked and serialized in the activation and again in the outbox's write, so
fifty large ones (a map's echo steps each returning a large run input) ran past 2 s and
the run hung for good, its worker slot with it. Runs whose history has no
INLINE_SLICE_BYTES_PATCH marker at such a cut replay as they ran.

And a slice ends once the workflow task's expression share has less left than one
evaluation may take: twenty transforms of ~6,500 steps each in a row failed the eighth on
the share (while each alone fitted, and the same chain with an MCP step every fifth
completed). Runs whose history has no INLINE_SLICE_SHARE_PATCH marker at such a cut
replay as they ran.

Containers' expressions (a condition's or router's conditionCel, a loop's endConditionCel,
a map's itemsCel) take part too: each counts toward the slice's STEPS_PER_SLICE, and one
waits for a new slice when the slice is full or the share is low. A loop of 3,000
conditions (no step in it) ran in one activation and failed after 2,500 on the share
(2,400 held it about 0.5 s, their node runs queued for one write), and four costly
conditions in parallel branches failed on the share where the same as inline steps would
have waited for a fresh one. Runs whose history has no CONTAINER_SLICE_PATCH marker at
such a cut replay as they ran.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio import workflow

from temporal_workflows.cel_budget import task_share_low

INLINE_SLICE_PATCH = "inline-steps-cut-into-slices"
INLINE_SLICE_BYTES_PATCH = "inline-slices-bounded-by-output-bytes"
INLINE_SLICE_SHARE_PATCH = "inline-slices-bounded-by-the-expression-share"
CONTAINER_SLICE_PATCH = "slices-count-containers-expressions"
STEPS_PER_SLICE = 50
SLICE_OUTPUT_BYTES = 1024 * 1024


class InlineSlices:
    """Counts inline steps and containers' expressions since the activation last ended at a
    known point."""

    def __init__(self) -> None:
        self._in_a_row = 0
        self._expressions = 0
        self._bytes = 0
        self.cuts = 0

    def count(self, output_bytes: int = 0) -> None:
        """One more inline step ran, its output `output_bytes` long as JSON."""
        self._in_a_row += 1
        self._bytes += output_bytes

    def count_expression(self) -> None:
        """One more container's expression was evaluated."""
        self._expressions += 1

    def full(self) -> bool:
        """The slice holds STEPS_PER_SLICE steps: the next one waits for a new slice."""
        return self._in_a_row >= STEPS_PER_SLICE

    def full_with_expressions(self) -> bool:
        """The slice holds STEPS_PER_SLICE steps and containers' expressions together."""
        return self._in_a_row + self._expressions >= STEPS_PER_SLICE

    def heavy(self) -> bool:
        """The slice's outputs hold SLICE_OUTPUT_BYTES: the next step waits for a new one."""
        return self._bytes >= SLICE_OUTPUT_BYTES

    def started(self) -> bool:
        """At least one inline step ran in this slice."""
        return self._in_a_row > 0

    def started_with_expressions(self) -> bool:
        """At least one inline step or container's expression ran in this slice."""
        return self._in_a_row + self._expressions > 0

    def ticket(self) -> int:
        """Taken before waiting at a cut: which slice the waiter saw."""
        return self.cuts

    def cut(self, ticket: int) -> None:
        """The activation ended here: a new slice, with a fresh expression share. Only the
        first of the steps that waited at the same cut starts it (the items of a map wait
        there together; each restarting the count let them all run in one activation)."""
        if ticket == self.cuts:
            self._in_a_row = self._expressions = self._bytes = 0
            self.cuts += 1

    def restart(self) -> None:
        """The activation ended for another reason (an activity's result arrived)."""
        self._in_a_row = self._expressions = self._bytes = 0


@dataclass
class SliceCutter:
    """Ends the activation where a slice is full: the run waits for its queued writes (a
    local activity), and the next slice starts. `on`: the run slices at all (runs started
    before RunInput.inline_steps_yield do not)."""

    slices: InlineSlices
    write_queued: Callable[[], Awaitable[None]]
    on: bool

    async def before_inline_step(self) -> None:
        """Wait for a new slice when the next inline step does not fit this one."""
        # Before the step's work, and again after each wait: the steps that waited
        # together resume into one slice, and those past it wait for the next.
        while self._inline_slice_ended():
            await self._cut()

    async def before_expression(self) -> None:
        """Before a container's expression: wait for a new slice when the slice is full or
        the workflow task's share low, and count the expression in."""
        if not self.on:
            return
        # Again after each wait, as before inline steps: a map's items or a parallel
        # node's branches that waited at one cut resume into slices in turn.
        while self._full_with_expressions():
            await self._cut()
        self.slices.count_expression()

    async def _cut(self) -> None:
        ticket = self.slices.ticket()
        await self.write_queued()
        self.slices.cut(ticket)

    def _inline_slice_ended(self) -> bool:
        if self.slices.full():
            return workflow.patched(INLINE_SLICE_PATCH)
        if self.slices.heavy() and workflow.patched(INLINE_SLICE_BYTES_PATCH):
            return workflow.patched(INLINE_SLICE_PATCH)
        if (
            self.slices.started()
            and task_share_low()
            and workflow.patched(INLINE_SLICE_SHARE_PATCH)
            and workflow.patched(INLINE_SLICE_PATCH)
        ):
            return True
        # Only now, counting the containers' expressions in (a run without the marker
        # never did: asked earlier, the patch would be marked in runs that never need it).
        return self._full_with_expressions()

    def _full_with_expressions(self) -> bool:
        """Whether the slice, counting containers' expressions, is full or has spent the
        task's share; asks CONTAINER_SLICE_PATCH only then."""
        slices = self.slices
        ended = slices.full_with_expressions() or (
            slices.started_with_expressions() and task_share_low()
        )
        return ended and workflow.patched(CONTAINER_SLICE_PATCH)
