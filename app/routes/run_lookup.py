"""A run by its id alone, for clients that hold only a run id (the `trellis` CLI)."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request, Response

from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import AnyRunDep, NodeRunsView, ReadCacheDep, SettingsDep, StoreDep
from app.errors import NotFound
from app.openapi import API_PREFIX
from app.routes.cached_read import cached_read
from app.routes.conditional import NOT_MODIFIED
from app.routes.run_body import run_detail_body
from app.schemas.run import RunPublic, RunWithSummary

router = APIRouter(prefix=API_PREFIX + "/runs", tags=["runs"])


@router.get(
    "/{run_id}",
    dependencies=[needs(READ)],
    response_model=RunPublic | RunWithSummary,
    responses=NOT_MODIFIED,
)
async def find_run(
    request: Request,
    run: AnyRunDep,
    store: StoreDep,
    cache: ReadCacheDep,
    settings: SettingsDep,
    node_runs: NodeRunsView = "all",
) -> Response:
    """One run, whichever workflow it belongs to (`workflowDefinitionId` names it), with
    its node runs (or with `nodeRuns=summary`, their counts)."""
    run_id = run.id

    async def build() -> bytes:
        # Read again, after the change count (a read from before it could be kept under a
        # newer count), and by the read lane later, for a request this route checked once.
        fresh = await store.get_run(run_id)
        if fresh is None:
            raise NotFound(f"Run {run_id!r} not found")
        return await run_detail_body(store, fresh, node_runs, settings.max_response_bytes)

    # A run never moves to another workflow, so the lane checks access on this one.
    return await cached_read(
        request, cache, read="run_detail", workflow_id=run.workflow_definition_id,
        changes=partial(store.run_changes, run_id), view=node_runs, build=build,
    )  # fmt: skip
