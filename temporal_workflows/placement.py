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
        return Placement(
            node_run_id,
            item_index=item_index if item_index is not None else _of(outer, "item_index"),
            iteration=iteration if iteration is not None else _of(outer, "iteration"),
        )

    def fields(self) -> dict[str, Any]:
        """The node-run fields it sets."""
        return {
            "parent_node_run_id": self.parent_node_run_id,
            "item_index": self.item_index,
            "iteration": self.iteration,
        }


def _of(placement: Placement | None, name: str) -> int | None:
    return None if placement is None else getattr(placement, name)
