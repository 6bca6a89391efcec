"""Where a node run sits inside its run: the container node run whose children it runs,
and which item (a map) or iteration (a loop) of it. Shown on node runs
(`parentNodeRunId`, `itemIndex`, `iteration`) so a reader can tell a map's fifty runs of
one child node apart; null for a top-level node run. Inside nested containers the numbers
are the innermost map's and loop's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Placement:
    parent_node_run_id: str
    item_index: int | None = None
    iteration: int | None = None

    @staticmethod
    def under(
        outer: Placement | None,
        node_run_id: str,
        *,
        item_index: int | None = None,
        iteration: int | None = None,
    ) -> Placement:
        """Where a container's children sit: under its node run, in the map item and loop
        iteration the container is in itself, bar the one a map or loop sets."""
        item = outer.item_index if outer is not None else None
        loop = outer.iteration if outer is not None else None
        return Placement(
            node_run_id,
            item_index=item if item_index is None else item_index,
            iteration=loop if iteration is None else iteration,
        )

    def fields(self) -> dict[str, Any]:
        """The node-run fields it sets."""
        return {
            "parent_node_run_id": self.parent_node_run_id,
            "item_index": self.item_index,
            "iteration": self.iteration,
        }
