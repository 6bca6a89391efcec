"""Approvals and controls: the approve call's latency, and how soon pause/resume/cancel show.

Everything goes through the API over HTTP, as a client would: trigger, poll the run
detail (`GET …/runs/{runId}`) every few milliseconds, act, poll again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench import scenarios as sc
from bench.measure import Series
from bench.platform import BenchPlatform
from bench.report import Row

POLL_SECONDS = 0.005
# Any state this benchmark waits for arrives within a second; 30 s means it is broken.
WAIT_LIMIT_SECONDS = 30.0
# Long enough that pause, resume and cancel all land while the step is in flight.
LONG_STEP_SECONDS = 30

GATED = {
    "nodes": [
        {
            "name": "gate",
            "nodeType": "step",
            "executorKey": sc.ECHO,
            "config": {"text": "approved"},
            "humanReview": {"requiresConfirmation": True},
        }
    ]
}
LONG = {
    "nodes": [
        {
            "name": "long",
            "nodeType": "step",
            "executorKey": sc.DELAY,
            "config": {"seconds": LONG_STEP_SECONDS},
        }
    ]
}

Detail = dict[str, Any]


async def control_rows(p: BenchPlatform, approvals: int, controls: int, warmup: int) -> list[Row]:
    """Measure `approvals` gated runs and `controls` pause/resume/cancel cycles; their rows."""
    approve, completed = await _approvals(p, approvals, warmup)
    effects, posts = await _controls(p, controls, warmup)
    e = "(e)"
    return [
        Row(
            f"{e} approve POST -> 200 (Update accepted), 1 gated builtin:echo step",
            approve.median,
            None,
            "ms",
            None,
            None,
            ours_p90=approve.p90,
            note=f"p99 {percentile(approve.samples, 0.99):.1f} ms, n={len(approve.samples)}",
        ),
        Row(
            f"{e} approve 200 -> run completed in GET",
            completed.median,
            None,
            "ms",
            None,
            None,
            ours_p90=completed.p90,
            note=f"n={len(completed.samples)}",
        ),
        *(
            Row(
                f"{e} {action} 200 -> status {status} in GET (builtin:delay in flight)",
                effects[action].median,
                None,
                "ms",
                None,
                None,
                ours_p90=effects[action].p90,
                note=f"POST itself {posts[action].median:.1f} ms, n={len(effects[action].samples)}",
            )
            for action, status in _CONTROLS
        ),
    ]


_CONTROLS = (("pause", "paused"), ("resume", "running"), ("cancel", "cancelled"))


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile, the same rule as Series.p90."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _approvals(p: BenchPlatform, runs: int, warmup: int) -> tuple[Series, Series]:
    workflow_id = await p.create(GATED)
    approve, completed = Series(), Series()
    for i in range(warmup + runs):
        run = _runs_path(workflow_id, await _trigger(p, workflow_id))
        detail = await _poll(p, run, lambda d: bool(d["pendingRequirements"]))
        step_id = detail["pendingRequirements"][0]["stepId"]
        started = time.perf_counter()
        response = await p.api.post(
            f"{run}/approve", json={"stepId": step_id, "resolution": "confirm"}
        )
        accepted = time.perf_counter()
        _require(response, 200)
        await _poll(p, run, _status_is("completed"))
        if i >= warmup:
            approve.samples.append((accepted - started) * 1000)
            completed.samples.append((time.perf_counter() - accepted) * 1000)
            approve.run_id = completed.run_id = run.rsplit("/", 1)[-1]
    return approve, completed


async def _controls(
    p: BenchPlatform, cycles: int, warmup: int
) -> tuple[dict[str, Series], dict[str, Series]]:
    """Per action: 200 -> status shown in GET, and the POST itself (ms)."""
    workflow_id = await p.create(LONG)
    effects = {action: Series() for action, _ in _CONTROLS}
    posts = {action: Series() for action, _ in _CONTROLS}
    for i in range(warmup + cycles):
        run = _runs_path(workflow_id, await _trigger(p, workflow_id))
        # The step is in flight once its node run shows `running` (written after ~0.2 s).
        await _poll(p, run, lambda d: any(n["status"] == "running" for n in d["nodeRuns"]))
        for action, status in _CONTROLS:
            started = time.perf_counter()
            response = await p.api.post(f"{run}/{action}")
            accepted = time.perf_counter()
            _require(response, 200)
            await _poll(p, run, _status_is(status))
            if i >= warmup:
                posts[action].samples.append((accepted - started) * 1000)
                effects[action].samples.append((time.perf_counter() - accepted) * 1000)
                effects[action].run_id = run.rsplit("/", 1)[-1]
    return effects, posts


async def _trigger(p: BenchPlatform, workflow_id: str) -> str:
    response = await p.api.post(
        f"/api/v1/workflows/{workflow_id}/runs", json={"initialInput": {"n": 1}}
    )
    _require(response, 202)
    run_id: str = response.json()["runId"]
    return run_id


def _status_is(status: str) -> Callable[[Detail], bool]:
    return lambda detail: detail["status"] == status


def _runs_path(workflow_id: str, run_id: str) -> str:
    return f"/api/v1/workflows/{workflow_id}/runs/{run_id}"


async def _poll(p: BenchPlatform, run: str, done: Callable[[Detail], bool]) -> Detail:
    """GET the run every POLL_SECONDS until `done` holds; the detail that showed it."""
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while True:
        response = await p.api.get(run)
        _require(response, 200)
        detail: Detail = response.json()
        if done(detail):
            return detail
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run} stuck at {detail['status']}")
        await asyncio.sleep(POLL_SECONDS)


def _require(response: Any, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} -> "
            f"{response.status_code}, expected {status}: {response.text}"
        )
