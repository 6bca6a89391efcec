"""Helpers shared by the HITL tests (and the replay recordings): start, wait, decide, control."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from tests.support.platform import Platform


async def start(
    p: Platform, nodes: list[dict[str, Any]], initial: dict[str, Any] | None = None
) -> tuple[str, str]:
    """Create and enable a workflow of `nodes`, trigger it; return (workflow id, run id)."""
    wf = await p.create({"nodes": nodes})
    return wf, await p.trigger(wf, initial or {})


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


async def wait_for_requirement(
    p: Platform, workflow_id: str, run_id: str, step_id: str, **expected: Any
) -> dict[str, Any]:
    """Poll until the step's pending requirement has the `expected` fields (a gate asked
    again after a rejection: `retryCount`; a loop's next review: `iteration`)."""
    for _ in range(300):
        run = await wait_for_gate(p, workflow_id, run_id, step_id)
        (req,) = [r for r in run["pendingRequirements"] if r["stepId"] == step_id]
        if all(req.get(k) == v for k, v in expected.items()):
            return run
        await asyncio.sleep(0.05)
    raise AssertionError(f"gate {step_id} never showed {expected}")


async def approve(p: Platform, workflow_id: str, run_id: str, **body: Any) -> Any:
    return await p.api.post(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/approve", json=body)


async def control(p: Platform, workflow_id: str, run_id: str, action: str) -> Any:
    """POST a control action (`pause`, `resume`, `cancel`) to a run."""
    return await p.api.post(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/{action}")


@asynccontextmanager
async def held_approve(
    p: Platform, workflow_id: str, run_id: str, **body: Any
) -> AsyncIterator[Callable[[], Awaitable[tuple[int, dict[str, Any]]]]]:
    """An approve whose head the API has read (it arrived) and whose body's last byte waits
    for the returned `finish()`, which sends it and answers (status, JSON): a request sent
    at once with another, handled as late as a busy API handles it."""
    url = httpx.URL(str(p.api.base_url))
    data = json.dumps(body).encode()
    head = (
        f"POST /api/v1/workflows/{workflow_id}/runs/{run_id}/approve HTTP/1.1\r\n"
        f"Host: {url.host}:{url.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(head + data[:-1])
    await writer.drain()

    async def finish() -> tuple[int, dict[str, Any]]:
        writer.write(data[-1:])
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 20)
        status_line, _, rest = answer.partition(b"\r\n")
        return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])

    try:
        yield finish
    finally:
        writer.close()
