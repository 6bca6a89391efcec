"""Why a branch of a parallel or a map was cancelled: a sibling failed.

A failing child cancels its running siblings; their node runs said only `cancelled`,
which did not tell a user which child to look at (found by an audit). Each branch runs
with its block's `StopReason` in a context variable (asyncio tasks copy the context they
start in, so a branch's steps see it, nested blocks seeing their own first); the block
sets it before cancelling the others, and a node run ended by that cancel says why.
Deterministic: set from the failure, never from a clock or I/O.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass
class StopReason:
    """The reason a block cancelled its branches, once one failed; the enclosing block's
    for a branch nested in another."""

    outer: StopReason | None
    said: str | None = None

    def why(self) -> str | None:
        """This block's reason, else the nearest enclosing block's."""
        reason: StopReason | None = self
        while reason is not None:
            if reason.said is not None:
                return reason.said
            reason = reason.outer
        return None


_CURRENT: contextvars.ContextVar[StopReason | None] = contextvars.ContextVar(
    "trellis_stop_reason", default=None
)


def enter_block() -> StopReason:
    """A new reason for a block starting here (its branches run under it)."""
    return StopReason(outer=_CURRENT.get())


def run_under(reason: StopReason) -> None:
    """Called first in a branch's own task: what it runs sees `reason`."""
    _CURRENT.set(reason)


def cancelled_because() -> str:
    """What a node run ended by a cancel says: `cancelled`, and why when a sibling's
    failure caused it."""
    reason = _CURRENT.get()
    why = reason.why() if reason is not None else None
    return "cancelled" if why is None else f"cancelled: {why}"
