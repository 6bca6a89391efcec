"""The node tree as nodes and edges a canvas can draw, optionally with a run's state overlaid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from activities.store.base import Store
from activities.store.node_run_pages import node_run_pages
from activities.store.records import NodeRunRecord, RunRecord, WorkflowRecord
from app.schemas.graph import RunGraph, WorkflowGraph
from temporal_workflows.definition import WorkflowNode, WorkflowSpec
from temporal_workflows.read_model import node_run_counter


@dataclass
class GraphService:
    store: Store

    def of_workflow(self, workflow: WorkflowRecord) -> WorkflowGraph:
        """The current version's nodes and edges."""
        graph = build_graph(workflow.spec())
        return WorkflowGraph.model_validate(
            {"workflow_id": workflow.id, "version": workflow.version, **graph}
        )

    async def of_run(self, run: RunRecord) -> RunGraph:
        """The run's pinned version, each node with its latest node run."""
        # Before the states: every change after this id comes as an event after it.
        last_event_id = await self.store.last_event_id(run.id)
        graph = build_graph(run.definition_snapshot, await self._states(run.id))
        return RunGraph.model_validate(
            {
                "workflow_id": run.workflow_definition_id,
                "version": run.workflow_version,
                "run_id": run.id,
                "status": run.status,
                "last_event_id": last_event_id,
                **graph,
            }
        )

    async def _states(self, run_id: str) -> list[NodeRunRecord]:
        """The run's node runs without their snapshots: a run of any size has a graph (the
        console's run page asks for it beside the run's summary)."""
        return [
            n.model_copy(update=_WITHOUT_DATA)
            async for page in node_run_pages(self.store, run_id)
            for n in page
        ]


_WITHOUT_DATA = {"input_snapshot": None, "output_snapshot": None, "error": None}


def build_graph(spec: WorkflowSpec, node_runs: list[NodeRunRecord] | None = None) -> dict[str, Any]:
    """`{"nodes": [...], "edges": [...]}`; with node runs, each node carries its latest one."""
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    _sequence(spec.nodes, None, nodes, edges)
    if node_runs is not None:
        latest = latest_node_runs(node_runs)
        for node in nodes:
            node.update(_overlay(latest.get(node["id"])))
    return {"nodes": nodes, "edges": edges}


def latest_node_runs(node_runs: list[NodeRunRecord]) -> dict[str, NodeRunRecord]:
    """Per node id, its node run with the highest counter (the latest attempt at it)."""
    best: dict[str, NodeRunRecord] = {}
    for node_run in node_runs:
        current = best.get(node_run.node_id)
        if current is None or node_run_counter(node_run.id) > node_run_counter(current.id):
            best[node_run.node_id] = node_run
    return best


def _sequence(
    seq: list[WorkflowNode],
    parent: WorkflowNode | None,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
) -> None:
    """Add a sequence's nodes (and their subtrees) with `sequence` edges between them."""
    for i, node in enumerate(seq):
        nodes.append(_node(node, parent))
        if i > 0:
            edges.append(_edge(seq[i - 1], node, "sequence"))
        _inner(node, nodes, edges)


def _inner(node: WorkflowNode, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """The edges from a container into what it holds."""
    if node.node_type == "parallel":
        for child in node.children:
            nodes.append(_node(child, node))
            edges.append(_edge(node, child, "parallel"))
            _inner(child, nodes, edges)
    elif node.node_type in ("loop", "map") and node.children:
        # A map runs its children once per item: drawn like a loop over the items.
        into, back = ("map", "map_back") if node.node_type == "map" else ("loop", "loop_back")
        _sequence(node.children, node, nodes, edges)
        edges.append(_edge(node, node.children[0], into))
        edges.append(_edge(node.children[-1], node, back))
    elif node.node_type == "condition":
        for steps, kind in ((node.true_steps, "branch_true"), (node.false_steps, "branch_false")):
            if steps:
                _sequence(steps, node, nodes, edges)
                edges.append(_edge(node, steps[0], kind))
    elif node.node_type == "router":
        for choice in node.choices:
            if choice.steps:
                _sequence(choice.steps, node, nodes, edges)
                edges.append(_edge(node, choice.steps[0], "choice", choice.name))


def _node(node: WorkflowNode, parent: WorkflowNode | None) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "name": node.name,
        "node_type": node.node_type,
        "position": node.position,
        "executor_key": node.executor_key,
        "parent_id": parent.node_id if parent else None,
    }


def _edge(
    source: WorkflowNode, target: WorkflowNode, kind: str, choice: str | None = None
) -> dict[str, Any]:
    return {
        "id": f"{source.node_id}->{target.node_id}:{kind}",
        "source": source.node_id,
        "target": target.node_id,
        "kind": kind,
        "choice": choice,
    }


def _overlay(node_run: NodeRunRecord | None) -> dict[str, Any]:
    if node_run is None:
        return {
            "status": None,
            "attempt": None,
            "started_at": None,
            "finished_at": None,
            "node_run_id": None,
        }
    return {
        "status": node_run.status,
        "attempt": node_run.attempt,
        "started_at": node_run.started_at,
        "finished_at": node_run.finished_at,
        "node_run_id": node_run.id,
    }
