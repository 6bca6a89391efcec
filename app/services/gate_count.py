"""Open approval gates per workflow, read from the store (the `trellis_gates_open` gauge).

A gauge kept in a process would be wrong as soon as a gate opened on one worker closes on
another, or a process restarts; the read model holds the truth, so each scrape counts it.
"""

from __future__ import annotations

from collections import Counter

from activities.store.base import Store

# Runs scanned per status, as the approvals inbox does.
MAX_SCANNED_RUNS = 5_000
# A paused run keeps its open gates.
STATUSES_WITH_GATES = ("awaiting_approval", "paused")


async def open_gates_by_workflow(store: Store) -> dict[str, int]:
    """How many gates wait for a decision, by workflow (definition) id."""
    counts: Counter[str] = Counter()
    for status in STATUSES_WITH_GATES:
        for run in await store.list_gated_runs(status, MAX_SCANNED_RUNS):
            counts[run.workflow_definition_id] += len(run.pending_requirements)
    return dict(counts)
