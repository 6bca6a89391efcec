"""Runs of a workflow: trigger, list, detail, node runs, children (contract 7-12, 8b)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, status

from activities.store.records import RunRecord
from app.deps import RunStarterDep, StoreDep, WorkflowDep, check_id
from app.errors import NotFound
from app.schemas.run import (
    NodeRunList,
    NodeRunPublic,
    RunAccepted,
    RunCreate,
    RunPage,
    RunPublic,
    RunSummary,
)
from app.schemas.workflow import Pagination
from app.services.runs import RunService
from temporal_workflows.read_model import RunStatus

router = APIRouter(prefix="/workflows/{workflow_id}/runs", tags=["runs"])

StatusFilter = RunStatus
Page = Annotated[int, Query(ge=1)]
PerPage = Annotated[int, Query(alias="perPage", ge=1, le=100)]


async def get_run_or_404(run_id: str, workflow: WorkflowDep, store: StoreDep) -> RunRecord:
    """The run named in the path, which must belong to the workflow in the path."""
    run = await store.get_run(check_id(run_id, "run id"))
    if run is None or run.workflow_definition_id != workflow.id:
        raise NotFound(f"Run {run_id!r} not found for workflow {workflow.id!r}")
    return run


RunDep = Annotated[RunRecord, Depends(get_run_or_404)]


def get_run_service(store: StoreDep, starter: RunStarterDep) -> RunService:
    return RunService(store=store, starter=starter)


RunServiceDep = Annotated[RunService, Depends(get_run_service)]


@router.post("", status_code=status.HTTP_202_ACCEPTED)
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


@router.get("")
async def list_runs(
    workflow: WorkflowDep,
    store: StoreDep,
    status: StatusFilter | None = None,
    page: Page = 1,
    per_page: PerPage = 20,
) -> RunPage:
    """Runs of the workflow, newest first, with their node runs."""
    runs, total = await store.list_runs(workflow.id, status=status, page=page, per_page=per_page)
    return await _page(store, runs, total, page, per_page)


@router.get("/{run_id}")
async def get_run(run: RunDep, store: StoreDep) -> RunPublic:
    """One run with its snapshot, node runs and pending requirements."""
    node_runs = await store.list_node_runs([run.id])
    return RunPublic.from_record(run, node_runs)  # type: ignore[return-value]


@router.get("/{run_id}/children")
async def list_child_runs(
    run: RunDep, store: StoreDep, page: Page = 1, per_page: PerPage = 20
) -> RunPage:
    """Runs spawned from this run (retry, node rerun, replay), newest first."""
    runs, total = await store.list_runs(
        run.workflow_definition_id, parent_run_id=run.id, page=page, per_page=per_page
    )
    return await _page(store, runs, total, page, per_page)


@router.get("/{run_id}/nodes")
async def list_node_runs(run: RunDep, store: StoreDep) -> NodeRunList:
    """Every node run of the run, ordered by startedAt."""
    node_runs = await store.list_node_runs([run.id])
    return NodeRunList(
        run_id=run.id,
        workflow_id=run.workflow_definition_id,
        node_runs=[NodeRunPublic.from_record(n) for n in node_runs],
    )


@router.get("/{run_id}/nodes/{node_run_id}")
async def get_node_run(run: RunDep, node_run_id: str, store: StoreDep) -> NodeRunPublic:
    """One node run with its input and output snapshots."""
    record = await store.get_node_run(check_id(node_run_id, "node run id"))
    if record is None or record.workflow_run_id != run.id:
        raise NotFound(f"Node run {node_run_id!r} not found in run {run.id!r}")
    return NodeRunPublic.from_record(record)


async def _page(
    store: StoreDep, runs: list[RunRecord], total: int, page: int, per_page: int
) -> RunPage:
    node_runs = await store.list_node_runs([r.id for r in runs])
    by_run: dict[str, list] = {r.id: [] for r in runs}  # type: ignore[type-arg]
    for node_run in node_runs:
        by_run[node_run.workflow_run_id].append(node_run)
    return RunPage(
        runs=[RunSummary.from_record(r, by_run[r.id]) for r in runs],
        pagination=Pagination.of(total, page, per_page),
    )
