"""Which Temporal execution speaks for a run or node-run record: the latest one.

A reset (the Web UI's, `temporal workflow reset`) goes on in a new execution of the same
workflow id, whose writes start again from low revs: below the old execution's (its end,
or the reconciler's correction of it, at `RECONCILED_REV`), so by revs alone the store
kept the old state for good while the run went on in Temporal. A workflow write names
its execution (`execution`: the Temporal run id of the workflow that made it), and the
record keeps the one that spoke last and the few it replaced:

- the same execution, or a record no execution wrote yet: revs decide, as ever;
- an execution the record already replaced: a late write of an older one, refused;
- any other: a newer execution (a reset's, or a continue-as-new's) takes the record
  over whatever its revs, and the old execution's end goes with it (its start
  stays: the first one written, as a retried step's).

A write without `execution` (the API's, a legacy batch's) goes by revs alone.
"""

from __future__ import annotations

from typing import Any, Literal

# The replaced executions a record remembers: a late write comes from the one just
# replaced, hardly from one a reset or continue-as-new before it.
EARLIER_KEPT = 4
# A run's fields that only its end writes: a run taken over is not ended.
RUN_END_FIELDS = ("finished_at", "final_output", "error_summary", "end_order")
# A node run's fields that only its end writes. A node run taken over keeps the rest (a
# container open across a continue-as-new keeps its start and input).
NODE_RUN_END_FIELDS = ("finished_at", "error", "output_snapshot")

Verdict = Literal["revs", "stale", "takeover"]


def verdict(stored: dict[str, Any] | None, writer: str | None) -> Verdict:
    """How a write of execution `writer` is taken over the `stored` document."""
    current = None if stored is None else stored.get("execution")
    if writer is None or current is None or writer == current:
        return "revs"
    earlier: list[str] = (stored or {}).get("earlier_executions") or []
    if writer in earlier:
        return "stale"
    return "takeover"


def taken_over(stored: dict[str, Any], writer: str) -> dict[str, Any]:
    """The execution fields of a record `writer` takes over from `stored`'s execution."""
    earlier = [*(stored.get("earlier_executions") or ()), stored["execution"]]
    return {"execution": writer, "earlier_executions": earlier[-EARLIER_KEPT:]}


def node_run_base(stored: dict[str, Any]) -> dict[str, Any]:
    """What a node-run write taking the node run over is merged onto."""
    return {name: value for name, value in stored.items() if name not in NODE_RUN_END_FIELDS}
