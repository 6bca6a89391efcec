"""A run detail's body, as both run routes answer it: with every node run, or with
`nodeRuns=summary` their counts by status."""

from __future__ import annotations

from activities.store.base import Store
from activities.store.records import RunRecord
from app.routes.model_response import json_body
from app.schemas.run import RunPublic, RunWithSummary


async def run_detail_body(store: Store, run: RunRecord, view: str) -> bytes:
    if view == "summary":
        counts = (await store.node_run_counts_of([run.id]))[run.id]
        return json_body(RunWithSummary.summarised(run, counts))
    return json_body(RunPublic.from_record(run, await store.list_node_runs([run.id])))
