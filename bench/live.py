"""Watching a run as a client does: its SSE stream, or polling its detail every 5 ms.

Every event carries a `timestamp`. Events a step writes from the worker are stamped
just before their write, so `receipt - timestamp` is the delivery lag (same machine,
same clock). Events the workflow writes are stamped with workflow time and written
later, in a batch; their lag includes that batching and is reported apart.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench.stack import Stack

POLL_SECONDS = 0.005
WAIT_LIMIT_SECONDS = 60.0
TERMINAL_EVENTS = ("run_completed", "run_failed", "run_cancelled")
# Written by the step activity in the worker, stamped at their write.
WORKER_STAMPED = ("node_started", "node_completed")


@dataclass
class Lags:
    """Delivery lags (ms): events the worker wrote, and events the workflow batched."""

    worker: list[float] = field(default_factory=list)
    workflow: list[float] = field(default_factory=list)


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def follow(stack: Stack, workflow_id: str, run_id: str, lags: Lags | None = None) -> str:
    """Read the run's SSE stream until its terminal event; that event's type."""
    url = f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events"
    async with asyncio.timeout(WAIT_LIMIT_SECONDS), stack.api.get(url) as response:
        if response.status != 200:
            raise RuntimeError(f"GET {url} -> {response.status}")
        kind = ""
        async for raw in response.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                received = time.time()
                if lags is not None:
                    event = json.loads(line[5:])
                    lag = (received - _epoch(event["timestamp"])) * 1000
                    (lags.worker if kind in WORKER_STAMPED else lags.workflow).append(lag)
                if kind in TERMINAL_EVENTS:
                    return kind
    raise RuntimeError(f"the stream of {run_id} ended without a terminal event")


async def poll_until(stack: Stack, workflow_id: str, run_id: str, *statuses: str) -> dict[str, Any]:
    """GET the run detail every POLL_SECONDS until its status is one of `statuses`."""
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while True:
        detail = await stack.detail(workflow_id, run_id)
        if detail["status"] in statuses:
            return detail
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} stuck at {detail['status']}")
        await asyncio.sleep(POLL_SECONDS)


async def run_over_sse(
    stack: Stack, workflow_id: str, lags: Lags | None = None
) -> tuple[float, str]:
    """Trigger, then follow the stream to `run_completed`: (ms, run id)."""
    started = time.perf_counter()
    run_id = await stack.trigger(workflow_id)
    kind = await follow(stack, workflow_id, run_id, lags)
    ms = (time.perf_counter() - started) * 1000
    if kind != "run_completed":
        raise RuntimeError(await _why(stack, workflow_id, run_id, kind))
    return ms, run_id


async def _why(stack: Stack, workflow_id: str, run_id: str, kind: str) -> str:
    """What a run that did not complete says about it: its error and its failed steps."""
    detail = await stack.detail(workflow_id, run_id)
    failed = [
        f"{n['nodeName']} (attempt {n.get('attempt')}): {n.get('error')}"
        for n in detail["nodeRuns"]
        if n["status"] not in ("completed", "skipped")
    ]
    return f"run {run_id} ended with {kind}: {detail.get('errorSummary')}; failed: {failed[:3]}"


async def run_polling(stack: Stack, workflow_id: str) -> tuple[float, str]:
    """Trigger, then poll the detail until `completed`: (ms, run id)."""
    started = time.perf_counter()
    run_id = await stack.trigger(workflow_id)
    detail = await poll_until(stack, workflow_id, run_id, "completed", "failed", "cancelled")
    ms = (time.perf_counter() - started) * 1000
    if detail["status"] != "completed":
        raise RuntimeError(f"run {run_id} is {detail['status']}: {detail.get('errorSummary')}")
    return ms, run_id


async def run_via_temporal(stack: Stack, workflow_id: str) -> tuple[float, str]:
    """Trigger over HTTP, wait on the workflow's result (throughput: no read load).

    The interpreter writes `completed` to the store before its workflow returns.
    """
    started = time.perf_counter()
    run_id = await stack.trigger(workflow_id)
    await stack.client.get_workflow_handle(run_id).result()
    return (time.perf_counter() - started) * 1000, run_id


async def approve_one(stack: Stack, workflow_id: str) -> tuple[float, float]:
    """Trigger a gated run, wait at its gate with its stream open, approve: (POST ms, done ms).

    Done is the terminal event's arrival on the stream, timed from the POST's start.
    """
    run_id = await stack.trigger(workflow_id)
    # The gate and the run's awaiting_approval status are written together.
    detail = await poll_until(stack, workflow_id, run_id, "awaiting_approval")
    step_id = detail["pendingRequirements"][0]["stepId"]
    stream = asyncio.create_task(follow(stack, workflow_id, run_id))
    await asyncio.sleep(0.02)  # the stream is open and has read what is there
    started = time.perf_counter()
    try:
        await stack.send(
            "POST",
            f"/api/v1/workflows/{workflow_id}/runs/{run_id}/approve",
            200,
            {"stepId": step_id, "resolution": "confirm"},
        )
    except RuntimeError:
        stream.cancel()
        raise
    accepted = time.perf_counter()
    await stream
    finished = time.perf_counter()
    return (accepted - started) * 1000, (finished - started) * 1000


def hand_run(stack: Stack, workflow: str, inp: Any) -> Any:
    """A timed run of the hand-written `workflow`: start it, wait for its result."""

    async def one() -> tuple[float, str]:
        started = time.perf_counter()
        handle = await stack.start_hand(workflow, inp)
        await handle.result()
        return (time.perf_counter() - started) * 1000, handle.id

    return one
