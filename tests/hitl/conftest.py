"""HITL tests share the engine's platform fixture (real dev server, worker, API over HTTP)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.engine.conftest import Platform, platform  # noqa: F401


async def wait_for_gate(
    p: Platform, workflow_id: str, run_id: str, step_id: str, within: float = 15.0
) -> dict[str, Any]:
    """Poll the run detail until the step's requirement is pending; return the run."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        run: dict[str, Any] = (
            await p.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
        ).json()
        if any(r["stepId"] == step_id for r in run["pendingRequirements"]):
            return run
        if run["status"] in ("completed", "failed", "cancelled"):
            raise AssertionError(f"run ended ({run['status']}) before the gate opened: {run}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"gate {step_id} never opened: {run}")
        await asyncio.sleep(0.05)


async def approve(p: Platform, workflow_id: str, run_id: str, **body: Any) -> Any:
    return await p.api.post(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/approve", json=body)


def step_id_of(p_run: dict[str, Any], name: str) -> str:
    """The node id of the top-level or nested node called `name` in the run's snapshot."""

    def walk(nodes: list[dict[str, Any]]) -> str | None:
        for node in nodes:
            if node["name"] == name:
                return str(node["id"])
            nested = (
                node["children"]
                + node["trueSteps"]
                + node["falseSteps"]
                + [s for c in node["choices"] for s in c["steps"]]
            )
            found = walk(nested)
            if found:
                return found
        return None

    found = walk(p_run["definitionSnapshot"]["nodes"])
    assert found, name
    return found
