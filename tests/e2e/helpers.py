"""Read-outs shared by the end-to-end tests."""

from __future__ import annotations

from typing import Any


def node_runs(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's node runs by node name (each node runs once in these tests)."""
    return {n["nodeName"]: n for n in run["nodeRuns"]}
