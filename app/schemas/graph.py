"""Response bodies of the graph views (a canvas-ready tree, with or without a run overlaid)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from temporal_workflows.base import CamelModel
from temporal_workflows.definition import NodeType, Position

EdgeKind = Literal[
    "sequence",
    "branch_true",
    "branch_false",
    "choice",
    "parallel",
    "loop",
    "loop_back",
    "map",
    "map_back",
]


class GraphNode(CamelModel):
    id: str
    name: str
    node_type: NodeType
    position: Position
    executor_key: str | None = None
    # The container this node sits in (null at the top level).
    parent_id: str | None = None


class RunGraphNode(GraphNode):
    """A node with its latest node run in the run (all null when it never ran)."""

    status: str | None = None
    attempt: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    node_run_id: str | None = None


class GraphEdge(CamelModel):
    id: str
    source: str
    target: str
    kind: EdgeKind
    # The router choice an edge enters (kind `choice` only).
    choice: str | None = None


class WorkflowGraph(CamelModel):
    workflow_id: str
    version: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class RunGraph(CamelModel):
    workflow_id: str
    version: int
    run_id: str
    status: str
    nodes: list[RunGraphNode]
    edges: list[GraphEdge]
    # The newest event's id, read before the nodes' states (0: none yet): a live view
    # built from this graph follows the run's stream after it (`Last-Event-ID`), instead
    # of reading the whole log for what the graph already shows.
    last_event_id: int = 0
