"""A run detail's body, as both run routes answer it: with every node run, or with
`nodeRuns=summary` their counts by status."""

from __future__ import annotations

from activities.store.base import Store
from activities.store.records import RunRecord
from app.routes.model_response import json_body
from app.schemas.run import RunPublic, RunWithSummary


async def run_detail_body(store: Store, run: RunRecord, view: str, max_bytes: int) -> bytes:
    """ReadTooLarge (400) when its node runs pass `max_bytes` (TRELLIS_MAX_RESPONSE_BYTES)."""
    if view == "summary":
        counts = (await store.node_run_counts_of([run.id]))[run.id]
        return json_body(RunWithSummary.summarised(run, counts))
    node_runs = await store.list_node_runs([run.id], max_bytes)
    return json_body(RunPublic.from_record(run, node_runs))
