"""Graph views for a canvas: a definition's tree, and a run's tree with node states."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import StoreDep, WorkflowDep
from app.routes.runs import RunDep
from app.schemas.graph import RunGraph, WorkflowGraph
from app.services.graph import build_graph

router = APIRouter(prefix="/workflows/{workflow_id}", tags=["graph"])


@router.get("/graph")
async def workflow_graph(workflow: WorkflowDep) -> WorkflowGraph:
    """The current version's nodes and edges (sequence, branch, choice, parallel, loop)."""
    graph = build_graph(workflow.spec())
    return WorkflowGraph.model_validate(
        {"workflow_id": workflow.id, "version": workflow.version, **graph}
    )


@router.get("/runs/{run_id}/graph")
async def run_graph(run: RunDep, store: StoreDep) -> RunGraph:
    """The run's pinned version, each node with its latest status, attempt and timing."""
    graph = build_graph(run.definition_snapshot, await store.list_node_runs([run.id]))
    return RunGraph.model_validate(
        {
            "workflow_id": run.workflow_definition_id,
            "version": run.workflow_version,
            "run_id": run.id,
            "status": run.status,
            **graph,
        }
    )
