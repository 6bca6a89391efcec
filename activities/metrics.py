"""What the worker counts: runs started, ended and deleted, step attempts, gates, read-model
write lag.

Counted where the side effect happens, never in the workflow (it replays): the read-model
write activity counts a run's start, its end, a gate opening and a gate's decision when
that write lands in the store; the step activity times each attempt; the reconciler
counts the runs it ends and the waits of the gates they held open, and the runs the run
retention deletes. Labels stay bounded: a workflow (definition) id, an executor kind, an
outcome, a resolution — never a run id.
docs/operations.md lists every metric.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

# The run events that end a run, and the status each counts under.
RUN_ENDINGS = {"run_completed": "completed", "run_failed": "failed", "run_cancelled": "cancelled"}
RUN_STARTED = "run_started"
GATE_OPENED = "awaiting_approval"
GATE_DECIDED = "requirement_resolved"
# The run events this module counts (the write activity checks for them before counting).
COUNTED_EVENTS = frozenset({RUN_STARTED, GATE_OPENED, GATE_DECIDED, *RUN_ENDINGS})
RESOLUTIONS = frozenset({"confirm", "reject", "edit", "user_input", "route_select"})
# Run ends that close the gates still open without a decision: each counts its gates'
# waits under the run's end as their resolution.
GATES_CLOSED_BY = {"run_cancelled": "cancelled", "run_failed": "failed"}
STEP_OUTCOMES = ("completed", "failed", "cancelled")

# Steps take milliseconds (a built-in) to an hour (an agent); gates wait seconds to weeks.
STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
GATE_BUCKETS = (1, 10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86_400, 3 * 86_400, 7 * 86_400)
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 30)


# What runs a step, as `executor_kind` names it (`StepExecutor.kind_of`).
EXECUTOR_KINDS = ("builtin", "mcp", "a2a", "a2a_pool", "unknown")


class RunMetrics:
    """The worker's instruments, registered in `registry` (the one its /metrics serves)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.runs_started = Counter(
            "trellis_runs_started",
            "Runs whose workflow began: its first read-model write landed",
            ["workflow_id"],
            registry=registry,
        )
        self.runs_ended = Counter(
            "trellis_runs_ended",
            "Runs that reached a terminal status (completed, failed, cancelled)",
            ["workflow_id", "status"],
            registry=registry,
        )
        self.step_duration = Histogram(
            "trellis_step_duration_seconds",
            "Duration of one step attempt's executor call, by executor kind and outcome",
            ["executor_kind", "outcome"],
            buckets=STEP_BUCKETS,
            registry=registry,
        )
        self.attempts_lost = Counter(
            "trellis_step_attempts_lost",
            "Step attempts lost with their worker (killed, stalled, cut off from Temporal), "
            "counted by the attempt after them",
            ["executor_kind"],
            registry=registry,
        )
        # Served at 0 from the start, so a rate over it is known before the first loss.
        for kind in EXECUTOR_KINDS:
            self.attempts_lost.labels(kind)
        self.gates_opened = Counter(
            "trellis_gates_opened",
            "Approval gates opened (each time a gate opens, re-openings after a retry too)",
            ["workflow_id"],
            registry=registry,
        )
        self.gate_wait = Histogram(
            "trellis_gate_wait_seconds",
            "Time from a gate opening to its decision (a person's, its timeout's) or to the "
            "end of its run (cancelled, failed) while it waited",
            ["workflow_id", "resolution"],
            buckets=GATE_BUCKETS,
            registry=registry,
        )
        self.runs_deleted = Counter(
            "trellis_runs_deleted",
            "Ended runs the run retention deleted, with their node runs and events",
            registry=registry,
        )
        self.payloads_deleted = Counter(
            "trellis_payloads_deleted",
            "Large payloads (kept out of Temporal history) the run retention deleted with the"
            " last runs using them, and schedule firings' own once over",
            registry=registry,
        )
        self.write_lag = Histogram(
            "trellis_read_model_write_lag_seconds",
            "Age of the oldest write of a read-model batch when the batch landed in the store",
            buckets=LAG_BUCKETS,
            registry=registry,
        )

    def run_written(self, workflow_id: str, event: dict[str, Any], changes: dict[str, Any]) -> None:
        """Count what a run write that just landed (for the first time) says."""
        kind = event.get("type")
        if kind == RUN_STARTED:
            self.runs_started.labels(workflow_id).inc()
        elif kind in RUN_ENDINGS:
            self.run_ended(workflow_id, RUN_ENDINGS[kind])
        elif kind == GATE_OPENED:
            self.gates_opened.labels(workflow_id).inc()
        elif kind == GATE_DECIDED:
            self._gate_decided(workflow_id, str(event.get("stepId")), changes)

    def gates_closed(
        self, workflow_id: str, gates: list[dict[str, Any]], ended_at: Any, resolution: str
    ) -> None:
        """Gates the run's end closed while they waited (`resolution`: how the run ended)."""
        ended = parse_time(ended_at)
        for gate in gates:
            opened = parse_time(gate.get("createdAt"))
            if opened is not None and ended is not None:
                wait = max(0.0, (ended - opened).total_seconds())
                self.gate_wait.labels(workflow_id, resolution).observe(wait)

    def run_ended(self, workflow_id: str, status: str) -> None:
        self.runs_ended.labels(workflow_id, status).inc()

    def step_attempt(self, executor_kind: str, outcome: str, seconds: float) -> None:
        self.step_duration.labels(executor_kind, outcome).observe(seconds)

    def attempt_lost(self, executor_kind: str) -> None:
        self.attempts_lost.labels(executor_kind).inc()

    def batch_landed(self, oldest_write_at: str | None, now: datetime) -> None:
        """A read-model batch landed; `oldest_write_at` is when its first write was made."""
        made = parse_time(oldest_write_at)
        if made is not None:
            self.write_lag.observe(max(0.0, (now - made).total_seconds()))

    def _gate_decided(self, workflow_id: str, step_id: str, changes: dict[str, Any]) -> None:
        # The decided gate is the latest resolved requirement of its step (a gate re-opened
        # after a rejection keeps its earlier decisions in the audit trail).
        resolved = changes.get("resolved_requirements") or []
        gate = next((r for r in reversed(resolved) if r.get("stepId") == step_id), None)
        if gate is None:
            return
        opened, decided = parse_time(gate.get("createdAt")), parse_time(gate.get("decidedAt"))
        if opened is None or decided is None:
            return
        resolution = str(gate.get("resolution") or "")
        if resolution.startswith("timeout"):
            resolution = "timeout"
        elif resolution not in RESOLUTIONS:
            resolution = "other"
        wait = max(0.0, (decided - opened).total_seconds())
        self.gate_wait.labels(workflow_id, resolution).observe(wait)


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp as the workflow writes it ("…Z"); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
