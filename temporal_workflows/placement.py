"""Where a node run sits inside its run: the container node run whose children it runs,
and which item (a map) or iteration (a loop) of it. Shown on node runs
(`parentNodeRunId`, `itemIndex`, `iteration`) so a reader can tell a map's fifty runs of
one child node apart; null for a top-level node run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Placement:
    parent_node_run_id: str
    item_index: int | None = None
    iteration: int | None = None

    def fields(self) -> dict[str, Any]:
        """The node-run fields it sets."""
        return {
            "parent_node_run_id": self.parent_node_run_id,
            "item_index": self.item_index,
            "iteration": self.iteration,
        }
