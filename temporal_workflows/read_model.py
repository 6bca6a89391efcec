"""The read model's write protocol: statuses, revisions, node-run ids, record and event shapes.

The workflow, the step activity, the API and the reconciler all write run and node-run
records; this module is the one place that says how. Pure, so the sandbox may load it.

Revisions: every write carries a `rev`; a store applies it only when it is not older than
the stored one, so retries and out-of-order writes are harmless. (One thing a refused
step write still adds: its attempt's start, to a node run the workflow ended before that
start landed — `start_missed` in activities/store/documents.py.) The bands, lowest first:

- `BEFORE_RUN_REV` (0): a gate opened before a step ran; the step's own writes win.
- `attempt_rev(n, phase)`: the step activity's writes for attempt n (10n+1 .. 10n+9).
- `REVIEW_REV` < `OPEN_REV` < `FINAL_REV`: the workflow's own writes (an output review
  after the step wrote its end, a node still open, a node's final status).
- `RECORDED_REV` (-1): a run record as its starter first writes it.
- `START_CLAIM_REV` (0): a starter claiming a pending run just before it asks Temporal,
  or a cancel ending a run no start claimed; both `newer_only`, so one of them wins
  (`activities/start_claim.py`). Records written before claims existed are at this rev:
  they read as claimed.
- `START_FAILED_REV` (0): the starter marking a run whose workflow Temporal refused to
  start, below the workflow's first run write (rev 1): a start that reported an error
  but was accepted after all (a deadline exceeded) still shows its run, and a repeat of
  the trigger may start the run again.
- `CANCELLED_UNSTARTED_REV`: a cancel ending a claimed run whose workflow Temporal does
  not know (the start failed, or its starter died): above the workflow's writes, since a
  start still in flight is cancelled through Temporal right after.
- `RECONCILED_REV`: the reconciler correcting a run Temporal closed without its end.

Across the bands: a write naming a newer Temporal execution of the run (a reset's) takes
a record over whatever its rev, and one of an execution it went on from is refused
(activities/store/executions.py).
"""

from __future__ import annotations

from typing import Any, Literal

RunStatus = Literal[
    "pending", "running", "paused", "awaiting_approval", "completed", "failed", "cancelled"
]
NodeRunStatus = Literal[
    "pending", "running", "awaiting_approval", "completed", "failed", "skipped", "cancelled"
]
RUN_STATUSES: tuple[RunStatus, ...] = (
    "pending",
    "running",
    "paused",
    "awaiting_approval",
    "completed",
    "failed",
    "cancelled",
)
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
OPEN_RUN_STATUSES: tuple[RunStatus, ...] = ("pending", "running", "paused", "awaiting_approval")
OPEN_NODE_STATUSES: frozenset[str] = frozenset({"pending", "running", "awaiting_approval"})
# The last event of every run's log (the live stream ends after it).
TERMINAL_EVENTS: frozenset[str] = frozenset({"run_completed", "run_failed", "run_cancelled"})

AttemptPhase = Literal["running", "attempt_failed", "completed", "ended"]
_PHASE_OFFSET: dict[AttemptPhase, int] = {
    "running": 1,
    "attempt_failed": 2,
    "completed": 3,
    "ended": 9,
}

BEFORE_RUN_REV = 0
FINAL_REV = 1_000_000_000
OPEN_REV = FINAL_REV - 1
REVIEW_REV = FINAL_REV - 2
# Run records: written at -1, claimed at 0, then 1, 2, … by the workflow (one per
# published change).
RECORDED_REV = -1
START_CLAIM_REV = 0
START_FAILED_REV = START_CLAIM_REV
RECONCILED_REV = 2 * FINAL_REV
CANCELLED_UNSTARTED_REV = RECONCILED_REV - 1
# Run revs the workflow writes are below this; the API's and the reconciler's are not (a
# run's end overrides only the workflow's own writes: `Store.update_run`'s `ending`).
WORKFLOW_REVS_BELOW = CANCELLED_UNSTARTED_REV


def attempt_rev(attempt: int, phase: AttemptPhase) -> int:
    """The rev of a step activity's write: later attempts outrank earlier ones."""
    return attempt * 10 + _PHASE_OFFSET[phase]


# A step the workflow evaluates itself writes what a first successful attempt would, so an
# output-review gate (REVIEW_REV) and its verdict (FINAL_REV) still follow it.
INLINE_DONE_REV = attempt_rev(1, "completed")


def node_run_id(run_id: str, node_id: str, count: int) -> str:
    """The id of a node's `count`-th node run in a run: `{runId}.{nodeId}.{count}`."""
    return f"{run_id}.{node_id}.{count}"


def node_run_counter(node_run_id: str) -> int:
    """The count of a node-run id (0 when it has none)."""
    tail = node_run_id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def node_record(
    *,
    run_id: str,
    node_run_id: str,
    node_id: str,
    node_name: str,
    node_type: str,
    status: NodeRunStatus,
    rev: int,
    **fields: Any,
) -> dict[str, Any]:
    """A node-run write: the identifying fields, its status and rev, and the fields to merge."""
    return {
        "id": node_run_id,
        "workflow_run_id": run_id,
        "node_id": node_id,
        "node_name": node_name,
        "node_type": node_type,
        "status": status,
        "rev": rev,
        **fields,
    }


def node_event(
    kind: str,
    *,
    run_id: str,
    node_run_id: str,
    node_id: str,
    node_name: str,
    status: str,
    timestamp: str,
    **extra: Any,
) -> dict[str, Any]:
    """An entry of the run's event log about one node run."""
    return {
        "type": kind,
        "runId": run_id,
        "nodeRunId": node_run_id,
        "nodeId": node_id,
        "nodeName": node_name,
        "status": status,
        "timestamp": timestamp,
        **extra,
    }


def run_event(
    kind: str, *, run_id: str, status: str, timestamp: str, **extra: Any
) -> dict[str, Any]:
    """An entry of the run's event log about the run itself."""
    return {"type": kind, "runId": run_id, "status": status, "timestamp": timestamp, **extra}
