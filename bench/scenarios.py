"""The benchmark's workloads: definitions for our API and the matching hand-written inputs."""

from __future__ import annotations

from typing import Any

from bench.a2a_peer import AGENT
from bench.handwritten import SLEEPY_SECONDS, BatchInput, Kind

ECHO, DELAY, MCP_ECHO, A2A_ECHO = "builtin:echo", "builtin:delay", "echo", AGENT
# An MCP tool that answers after SLEEPY_SECONDS: long enough that every child of a
# parallel block has started before the first ends, if nothing holds them back.
MCP_SLEEPY = "sleepy"
# The hand-written activity that makes the same call as each of our executor keys.
HAND_KIND: dict[str, Kind] = {
    MCP_ECHO: "mcp",
    MCP_SLEEPY: "mcp-slow",
    A2A_ECHO: "a2a",
    DELAY: "plain",
    ECHO: "local",
}
LABEL = {
    MCP_ECHO: "MCP echo",
    MCP_SLEEPY: f"MCP sleepy {SLEEPY_SECONDS:g}s",
    A2A_ECHO: "A2A echo",
    DELAY: "builtin:delay 0s",
    ECHO: "builtin:echo",
}


def _step(index: int, key: str) -> dict[str, Any]:
    config: dict[str, Any] = {"text": f"step {index}"}
    if key == DELAY:
        config = {"seconds": 0}
    elif key == MCP_SLEEPY:
        config = {"seconds": SLEEPY_SECONDS}
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


GATED = {
    "nodes": [
        {
            "name": "gate",
            "nodeType": "step",
            "executorKey": ECHO,
            "config": {"text": "approved"},
            "humanReview": {"requiresConfirmation": True},
        }
    ]
}


def hand(steps: int, key: str) -> BatchInput:
    """The hand-written equivalent's input (same step count, same call, same input)."""
    return BatchInput(steps=steps, kind=HAND_KIND[key], input={"n": 1})
