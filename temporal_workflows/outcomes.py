"""How a node ends other than by completing: the exceptions that carry it up the tree."""

from __future__ import annotations

from typing import Any

# What a reviewer's (or a gate timeout's) skip records as the node run's error.
SKIPPED_BY_REVIEWER = "skipped by reviewer"


class RunStopped(Exception):
    """Ends the run early: parallel siblings are cancelled, the run records why."""


class NodeFailed(RunStopped):
    """A node failed under policy `fail`: the run fails with this summary."""

    def __init__(self, node_name: str, error: str) -> None:
        super().__init__(f"Node '{node_name}' failed: {error}")
        self.node_name = node_name
        self.error = error


class RunCancelled(RunStopped):
    """A reviewer's reject or a gate's timeout asked to cancel the run."""


class NodeSkipped(Exception):
    """The node is skipped (a gate said so, or it failed under onError=skip).

    It outputs nothing; `error` and `fields` go on its node run, recorded where the
    node is run (one place for both ways a node is skipped).
    """

    def __init__(self, error: str = SKIPPED_BY_REVIEWER, **fields: Any) -> None:
        super().__init__(error)
        self.error = error
        self.fields = fields
