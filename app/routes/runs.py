"""Runs of a workflow: trigger, list, detail, node runs, children (contract 7-12, 8b)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response, status

from app.auth.caller import CONTROL, READ
from app.auth.guard import needs
from app.deps import (
    MAX_PAGE,
    NodeRunDep,
    Page,
    PerPage,
    RunDep,
    RunListingDep,
    RunServiceDep,
    StoreDep,
    WorkflowAccessDep,
    WorkflowDep,
)
from app.routes.model_response import model_response
from app.schemas.run import (
    NodeRunList,
    NodeRunPage,
    NodeRunPublic,
    RunAccepted,
    RunCreate,
    RunPage,
    RunPublic,
    RunWithSummary,
)
from app.schemas.workflow import Pagination
from temporal_workflows.read_model import RunStatus

router = APIRouter(prefix="/workflows/{workflow_id}/runs", tags=["runs"])

# Opt-in for runs with thousands of node runs; without it, the contract's shapes.
NodeRunsView = Annotated[Literal["all", "summary"], Query(alias="nodeRuns")]
NodePage = Annotated[int | None, Query(ge=1, le=MAX_PAGE)]
NodePerPage = Annotated[int | None, Query(alias="perPage", ge=1, le=1000)]


@router.post("", status_code=status.HTTP_202_ACCEPTED, dependencies=[needs(CONTROL)])
async def trigger_run(
    workflow: WorkflowDep,
    runs: RunServiceDep,
    body: RunCreate | None = None,
    idempotency_key: Annotated[
        str | None, Header(alias="Idempotency-Key", min_length=1, max_length=200)
    ] = None,
) -> RunAccepted:
    """Start a run of the workflow's current version; it executes asynchronously."""
    run = await runs.trigger(workflow, body or RunCreate(), idempotency_key)
    return RunAccepted.of(run, "Workflow run queued successfully")


@router.get("", dependencies=[needs(READ)])
async def list_runs(
    workflow: WorkflowAccessDep,
    listing: RunListingDep,
    status: RunStatus | None = None,
    page: Page = 1,
    per_page: PerPage = 20,
) -> RunPage:
    """Runs of the workflow, newest first, with their node runs."""
    return await listing.of_workflow(workflow.id, status, page, per_page)


@router.get("/{run_id}", dependencies=[needs(READ)], response_model=RunPublic | RunWithSummary)
async def get_run(run: RunDep, store: StoreDep, node_runs: NodeRunsView = "all") -> Response:
    """One run with its snapshot, node runs (or with `nodeRuns=summary`, their counts)."""
    if node_runs == "summary":
        return model_response(RunWithSummary.summarised(run, await store.node_run_counts(run.id)))
    return model_response(RunPublic.from_record(run, await store.list_node_runs([run.id])))


@router.get("/{run_id}/children", dependencies=[needs(READ)])
async def list_child_runs(
    run: RunDep, listing: RunListingDep, page: Page = 1, per_page: PerPage = 20
) -> RunPage:
    """Runs spawned from this run (retry, node rerun, replay), newest first."""
    return await listing.children(run, page, per_page)


@router.get("/{run_id}/nodes", dependencies=[needs(READ)], response_model=NodeRunList | NodeRunPage)
async def list_node_runs(
    run: RunDep, store: StoreDep, page: NodePage = None, per_page: NodePerPage = None
) -> Response:
    """Every node run of the run, ordered by startedAt; one page with `page`/`perPage`."""
    if page is None and per_page is None:
        return model_response(NodeRunList.of(run, await store.list_node_runs([run.id])))
    page, per_page = page or 1, per_page or 100
    found, total = await store.node_run_page(run.id, (page - 1) * per_page, per_page)
    listed = NodeRunList.of(run, found)
    return model_response(
        NodeRunPage(**dict(listed), pagination=Pagination.of(total, page, per_page))
    )


@router.get("/{run_id}/nodes/{node_run_id}", dependencies=[needs(READ)])
async def get_node_run(node_run: NodeRunDep) -> NodeRunPublic:
    """One node run with its input and output snapshots."""
    return NodeRunPublic.from_record(node_run)
