"""Graph views for a canvas: a definition's tree, and a run's tree with node states."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import GraphDep, RunDep, WorkflowDep
from app.openapi import API_PREFIX
from app.schemas.graph import RunGraph, WorkflowGraph

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}", tags=["graph"])


@router.get("/graph", dependencies=[needs(READ)])
async def workflow_graph(workflow: WorkflowDep, graphs: GraphDep) -> WorkflowGraph:
    """The current version's nodes and edges (sequence, branch, choice, parallel, loop)."""
    return graphs.of_workflow(workflow)


@router.get("/runs/{run_id}/graph", dependencies=[needs(READ)])
async def run_graph(run: RunDep, graphs: GraphDep) -> RunGraph:
    """The run's pinned version, each node with its latest status, attempt and timing."""
    return await graphs.of_run(run)
