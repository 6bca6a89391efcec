"""The benchmark's workloads: definitions for our API and the matching hand-written inputs."""

from __future__ import annotations

from typing import Any

from bench.handwritten import BatchInput

ECHO, DELAY, MCP_ECHO = "builtin:echo", "builtin:delay", "echo"
# What each executor key runs as in the interpreter (see INLINE_EXECUTORS there).
KINDS = {ECHO: "inline", DELAY: "activities, 0 s delay", MCP_ECHO: "MCP echo tool"}


def _step(index: int, key: str) -> dict[str, Any]:
    config: dict[str, Any] = {"text": f"step {index}"}
    if key == DELAY:
        config = {"seconds": 0}
    return {"name": f"s{index}", "nodeType": "step", "executorKey": key, "config": config}


def sequence(steps: int, key: str) -> dict[str, Any]:
    """`steps` steps one after the other."""
    return {"nodes": [_step(i, key) for i in range(steps)]}


def parallel(branches: int, key: str) -> dict[str, Any]:
    """One parallel block of `branches` steps, all allowed to run at once."""
    children = [_step(i, key) for i in range(branches)]
    return {
        "maxConcurrency": branches,
        "nodes": [{"name": "fan", "nodeType": "parallel", "children": children}],
    }


def hand(steps: int, local: bool) -> BatchInput:
    """The hand-written equivalent's input (same step count and input as ours)."""
    return BatchInput(steps=steps, local=local, input={"n": 1})
