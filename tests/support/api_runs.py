"""Runs driven through an API over HTTP (a `trellis api` process, or any API client)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx


async def create_and_trigger(
    api: httpx.AsyncClient, definition: dict[str, Any], initial_input: dict[str, Any] | None = None
) -> tuple[str, str]:
    """Create an enabled workflow (a fresh name) from `definition`, trigger it once (with
    `initial_input`, {} by default): (workflow id, run id)."""
    name = f"run-{uuid.uuid4().hex[:8]}"
    created = await api.post("/api/v1/workflows", json={"name": name, **definition})
    assert created.status_code == 201, created.text
    wf = created.json()["id"]
    assert (await api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": True})).is_success
    triggered = await api.post(
        f"/api/v1/workflows/{wf}/runs", json={"initialInput": initial_input or {}}
    )
    assert triggered.status_code == 202, triggered.text
    return wf, triggered.json()["runId"]


async def wait_for(
    api: httpx.AsyncClient,
    wf: str,
    run_id: str,
    done: Callable[[dict[str, Any]], Any],
    within: float = 60.0,
) -> dict[str, Any]:
    """The run's detail once `done(detail)` holds; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        run: dict[str, Any] = (await api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
        if done(run):
            return run
        assert time.monotonic() < deadline, f"not reached in {within}s: {run}"
        await asyncio.sleep(0.05)
