"""Builders and read-outs shared by the end-to-end tests."""

from __future__ import annotations

from typing import Any

# Short backoff so retried steps finish in a fraction of a second.
FAST_RETRIES = {"backoffBaseSeconds": 0.05, "backoffMaxSeconds": 0.1}


def step(
    name: str, key: str, config: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A step node calling `key` (an MCP tool, an A2A agent or a built-in)."""
    return {"name": name, "nodeType": "step", "executorKey": key, "config": config or {}, **fields}


def pool_step(
    name: str, agents: list[str], config: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A step node running on one agent of `agents`."""
    return {"name": name, "nodeType": "step", "a2aPool": agents, "config": config or {}, **fields}


def retries(max_retries: int, on_error: str = "fail") -> dict[str, Any]:
    """A stepConfig with `max_retries` fast retries."""
    return {"maxRetries": max_retries, "onError": on_error, **FAST_RETRIES}


def node_runs(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's node runs by node name (each node runs once in these tests)."""
    return {n["nodeName"]: n for n in run["nodeRuns"]}
