"""Runs of a workflow: trigger, list, detail, node runs, children (contract 7-12, 8b)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.auth.caller import CONTROL, READ
from app.auth.guard import CallerDep, needs
from app.deps import (
    KEY_REUSED,
    MAX_PAGE,
    WHOLE_NUMBER,
    IdempotencyKey,
    NodeRunDep,
    NodeRunsView,
    Page,
    PerPage,
    ReadCacheDep,
    RunDep,
    RunListingDep,
    RunServiceDep,
    ScheduleIdFilter,
    SettingsDep,
    StoreDep,
    WorkflowAccessDep,
    WorkflowDep,
    get_run_or_404,
    id_path,
)
from app.openapi import API_PREFIX, errors
from app.routes.cached_read import cached_read
from app.routes.conditional import NOT_MODIFIED
from app.routes.model_response import json_body, model_response
from app.routes.run_body import run_detail_body
from app.schemas.run import (
    CountedRunPage,
    NodeRunList,
    NodeRunPage,
    NodeRunPublic,
    RunPage,
    RunPublic,
    RunWithSummary,
)
from app.schemas.run_trigger import RunAccepted, RunCreate
from app.schemas.workflow import Pagination
from temporal_workflows.read_model import RunStatus

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/runs", tags=["runs"])

NodePage = Annotated[int | None, Query(ge=1, le=MAX_PAGE), WHOLE_NUMBER]
NodePerPage = Annotated[int | None, Query(alias="perPage", ge=1, le=1000), WHOLE_NUMBER]


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[needs(CONTROL)],
    responses=errors(409, s409=KEY_REUSED),
)
async def trigger_run(
    workflow: WorkflowDep,
    runs: RunServiceDep,
    body: RunCreate | None = None,
    idempotency_key: IdempotencyKey = None,
) -> RunAccepted:
    """Start a run of the workflow's current version; it executes asynchronously."""
    run = await runs.trigger(workflow, body or RunCreate(), idempotency_key)
    return RunAccepted.of(run, "Workflow run queued successfully")


@router.get(
    "",
    dependencies=[needs(READ)],
    response_model=RunPage | CountedRunPage,
    responses=NOT_MODIFIED,
)
async def list_runs(
    request: Request,
    workflow: WorkflowAccessDep,
    listing: RunListingDep,
    store: StoreDep,
    cache: ReadCacheDep,
    status: RunStatus | None = None,
    page: Page = 1,
    per_page: PerPage = 20,
    node_runs: NodeRunsView = "all",
    schedule_id: ScheduleIdFilter = None,
) -> Response:
    """Runs of the workflow, newest first, with their node runs (or with
    `nodeRuns=summary`, their counts); with `scheduleId`, those that schedule started."""
    counted = node_runs == "summary"

    async def build() -> bytes:
        return json_body(
            await listing.of_workflow(workflow.id, status, page, per_page, counted, schedule_id)
        )

    return await cached_read(
        request, cache, read="run_list", workflow_id=workflow.id,
        changes=partial(store.workflow_run_changes, workflow.id),
        view="runs-counted" if counted else "runs", build=build,
    )  # fmt: skip


@router.get(
    "/{run_id}",
    dependencies=[needs(READ)],
    response_model=RunPublic | RunWithSummary,
    responses=NOT_MODIFIED,
)
async def get_run(
    request: Request,
    run_id: Annotated[str, id_path("run id")],
    workflow: WorkflowAccessDep,
    store: StoreDep,
    cache: ReadCacheDep,
    settings: SettingsDep,
    caller: CallerDep,
    node_runs: NodeRunsView = "all",
) -> Response:
    """One run with its snapshot, node runs (or with `nodeRuns=summary`, their counts)."""

    async def build() -> bytes:
        run = await get_run_or_404(run_id, workflow, store, caller)
        return await run_detail_body(store, run, node_runs, settings.max_response_bytes)

    # Kept under the request's path: an answer is only kept once the run was found in the
    # workflow it names.
    return await cached_read(
        request, cache, read="run_detail", workflow_id=workflow.id,
        changes=partial(store.run_changes, run_id), view=node_runs,
        build=build,
    )  # fmt: skip


@router.get("/{run_id}/children", dependencies=[needs(READ)])
async def list_child_runs(
    run: RunDep,
    listing: RunListingDep,
    page: Page = 1,
    per_page: PerPage = 20,
    node_runs: NodeRunsView = "all",
) -> RunPage | CountedRunPage:
    """Runs spawned from this run (retry, node rerun, replay), newest first, with their
    node runs (or with `nodeRuns=summary`, their counts)."""
    return await listing.children(run, page, per_page, counted=node_runs == "summary")


@router.get("/{run_id}/nodes", dependencies=[needs(READ)], response_model=NodeRunList | NodeRunPage)
async def list_node_runs(
    run: RunDep,
    store: StoreDep,
    settings: SettingsDep,
    page: NodePage = None,
    per_page: NodePerPage = None,
) -> Response:
    """Every node run of the run, ordered by startedAt; one page with `page`/`perPage`."""
    limit = settings.max_response_bytes
    if page is None and per_page is None:
        return model_response(NodeRunList.of(run, await store.list_node_runs([run.id], limit)))
    page, per_page = page or 1, per_page or 100
    found, total = await store.node_run_page(run.id, (page - 1) * per_page, per_page, limit)
    listed = NodeRunList.of(run, found)
    return model_response(
        NodeRunPage(**dict(listed), pagination=Pagination.of(total, page, per_page))
    )


@router.get("/{run_id}/nodes/{node_run_id}", dependencies=[needs(READ)])
async def get_node_run(node_run: NodeRunDep) -> NodeRunPublic:
    """One node run with its input and output snapshots."""
    return NodeRunPublic.from_record(node_run)
