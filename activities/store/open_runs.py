"""The open runs of a workflow, or of the whole store, for readers that act on each: a
delete cancels them, the reconciler asks Temporal about them."""

from __future__ import annotations

from activities.store.base import Store
from activities.store.records import RunHeader
from temporal_workflows.read_model import OPEN_RUN_STATUSES

# Runs read at a time (headers: no definition snapshot).
RUNS_PER_PAGE = 500


async def open_runs(store: Store, workflow_id: str | None = None) -> list[RunHeader]:
    """Every run whose status is open, of `workflow_id` or (None) of every workflow."""
    found: list[RunHeader] = []
    for status in OPEN_RUN_STATUSES:
        page = 1
        while True:
            runs, total = await store.list_runs(
                workflow_id, status=status, page=page, per_page=RUNS_PER_PAGE
            )
            found += runs
            if not runs or page * RUNS_PER_PAGE >= total:
                break
            page += 1
    return found
