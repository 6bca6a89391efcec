"""Where a run stands, as data: what it carries across continue-as-new.

A run may continue as new at any boundary between nodes, however deep (docs/semantics.md,
"Continue-as-new"). Every container it is inside then contributes a frame saying how far
it got, innermost last: the tree of frames is the run's position, and the new execution
walks down it to carry on exactly there. Pure models; the interpreter builds and reads them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from temporal_workflows.base import CamelModel


class ScopeState(CamelModel):
    """The data a strand of the run sees, beyond what the whole run shares.

    A branch's holds only what it changed since its fork (`Scope.state`); one carried by
    an older worker holds a whole copy. Restored over the fork, both give the same scope.
    """

    previous_step_content: Any = None
    # False: the strand's previous_step_content is its fork's, not carried.
    content_carried: bool = True
    previous_step_outputs: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)
    # The names the strand set itself (`Scope.written`); None from older workers, whose
    # strands count every name they carried as set (what a parallel then took back).
    written: list[str] | None = None


class SequenceFrame(CamelModel):
    """A sequence of nodes: the node to start at, or the container node it is inside."""

    index: int
    inside: NodeFrame | None = None


class BranchFrame(CamelModel):
    """One branch of a parallel node, or one item of a map node."""

    state: Literal["done", "suspended", "waiting"]
    # done: what the branch produced.
    output: Any = None
    # done and suspended: the branch's own data.
    scope: ScopeState | None = None
    # suspended: where inside the branch (a parallel child's frame, a map item's sequence).
    inside: NodeFrame | None = None
    sequence: SequenceFrame | None = None


class LoopFrame(CamelModel):
    kind: Literal["loop"] = "loop"
    node_run_id: str
    iteration: int
    outputs: list[Any] = Field(default_factory=list)
    # The enclosing loop's `iteration` / `loop_outputs`, restored when this loop ends.
    outer: dict[str, Any] = Field(default_factory=dict)
    # This iteration so far: outputs by child name, and where in the children it is.
    iteration_outputs: dict[str, Any] = Field(default_factory=dict)
    at: SequenceFrame


class ConditionFrame(CamelModel):
    kind: Literal["condition"] = "condition"
    node_run_id: str
    # The chosen branch and why (the node run's input snapshot).
    snapshot: dict[str, Any]
    at: SequenceFrame


class RouterFrame(CamelModel):
    kind: Literal["router"] = "router"
    node_run_id: str
    selected: list[str]
    # Outputs of the selected choices already run, and where in the current one it is.
    outputs: dict[str, Any] = Field(default_factory=dict)
    choice: str
    at: SequenceFrame


class ParallelFrame(CamelModel):
    kind: Literal["parallel"] = "parallel"
    node_run_id: str
    branches: list[BranchFrame]


class MapFrame(CamelModel):
    kind: Literal["map"] = "map"
    node_run_id: str
    items: list[Any]
    branches: list[BranchFrame]


NodeFrame = Annotated[
    LoopFrame | ConditionFrame | RouterFrame | ParallelFrame | MapFrame,
    Field(discriminator="kind"),
]

SequenceFrame.model_rebuild()
BranchFrame.model_rebuild()
