"""SIGTERM is a deploy, not a crash: in-flight steps finish within the worker's grace period
(then are cancelled and retried elsewhere); the API ends live event streams at once and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import retries, step
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.processes import Processes, TrellisProcess, process_env

TERMINAL = {"completed", "failed", "cancelled"}


def env_for(temporal_env: WorkflowEnvironment, data_dir: Path, **extra: str) -> dict[str, str]:
    return process_env(data_dir, temporal_env.client.service_client.config.target_host, **extra)


def step_running(run: dict[str, Any]) -> bool:
    return any(n["status"] == "running" for n in run["nodeRuns"])


async def test_sigterm_lets_an_in_flight_step_finish_once(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    env = env_for(temporal_env, tmp_path)
    api_process = processes.api(env)
    first = processes.worker(env)
    delay = step("Wait", "builtin:delay", {"seconds": 4}, stepConfig=retries(2))
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        wf, run_id = await create_and_trigger(api, {"nodes": [delay]})
        await wait_for(api, wf, run_id, step_running)

        code, seconds = await asyncio.to_thread(first.stop)
        processes.worker(env)  # the next worker takes the run on from there
        run = await wait_for(api, wf, run_id, lambda r: r["status"] in TERMINAL)

    assert code == 0, first.output()
    assert 1 < seconds < 25  # it waited for the step, not for the whole grace period
    assert run["status"] == "completed", run
    [waited] = run["nodeRuns"]
    assert waited["attempt"] == 1  # finished by the stopping worker, not run again


async def test_a_step_outlasting_the_grace_period_is_cancelled_and_retried_elsewhere(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    env = env_for(temporal_env, tmp_path, TRELLIS_WORKER_SHUTDOWN_GRACE_SECONDS="1")
    api_process = processes.api(env)
    first = processes.worker(env)
    delay = step("Wait", "builtin:delay", {"seconds": 12}, stepConfig=retries(2))
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        wf, run_id = await create_and_trigger(api, {"nodes": [delay]})
        await wait_for(api, wf, run_id, step_running)

        code, seconds = await asyncio.to_thread(first.stop)
        processes.worker(env)
        run = await wait_for(api, wf, run_id, lambda r: r["status"] in TERMINAL)

    assert code == 0, first.output()
    assert seconds < 10  # the grace (1 s) ran out well before the 12 s step would have
    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["attempt"] == 2


async def event_kinds(api: httpx.AsyncClient, wf: str, run_id: str) -> list[str]:
    """The run's event log, kinds in order (the stream ends with the run)."""
    kinds = []
    async with api.stream("GET", f"/api/v1/workflows/{wf}/runs/{run_id}/events") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                kinds.append(line.split(":", 1)[1].strip())
    return kinds


async def test_a_step_with_no_retries_is_run_again_when_a_deploy_cuts_it_off(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    """The contract's default stepConfig (maxRetries 0): the one attempt a deploy took away
    is not the step failing; the workflow runs it again on the next worker."""
    env = env_for(temporal_env, tmp_path, TRELLIS_WORKER_SHUTDOWN_GRACE_SECONDS="1")
    api_process = processes.api(env)
    first = processes.worker(env)
    delay = step("Wait", "builtin:delay", {"seconds": 6})
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        wf, run_id = await create_and_trigger(api, {"nodes": [delay]})
        await wait_for(api, wf, run_id, step_running)

        code, seconds = await asyncio.to_thread(first.stop)
        processes.worker(env)
        run = await wait_for(api, wf, run_id, lambda r: r["status"] in TERMINAL)
        kinds = await event_kinds(api, wf, run_id)

    assert code == 0, first.output()
    assert seconds < 6  # cut off by the 1 s grace, not finished by the first worker
    assert run["status"] == "completed", run
    [waited] = run["nodeRuns"]
    assert (waited["status"], waited["attempt"], waited["error"]) == ("completed", 2, None)
    assert "node_cancelled" not in kinds and "node_failed" not in kinds, kinds
    assert kinds[-2:] == ["node_completed", "run_completed"], kinds


async def at_a_gate(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes, **extra: str
) -> tuple[TrellisProcess, str, str]:
    """An API and a worker, and a run of theirs waiting at a gate: (API, workflow, run)."""
    env = env_for(temporal_env, tmp_path, **extra)
    api_process = processes.api(env)
    processes.worker(env)
    gate = step("Approve", "builtin:echo", humanReview={"requiresConfirmation": True})
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        wf, run_id = await create_and_trigger(api, {"nodes": [gate]})
        await wait_for(api, wf, run_id, lambda r: r["status"] == "awaiting_approval")
    return api_process, wf, run_id


async def test_sigterm_ends_live_event_streams_and_the_api_exits_promptly(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    api_process, wf, run_id = await at_a_gate(temporal_env, tmp_path, processes)
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        streaming = asyncio.Event()

        async def follow() -> None:
            url = f"/api/v1/workflows/{wf}/runs/{run_id}/events"
            async with api.stream("GET", url, timeout=None) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        streaming.set()

        follower = asyncio.create_task(follow())
        await asyncio.wait_for(streaming.wait(), 10)
        code, seconds = await asyncio.to_thread(api_process.process.stop)
        await asyncio.wait_for(follower, 5)  # the stream ended; it did not hang

    # uvicorn shuts down, then re-raises the SIGTERM it caught (exit status -15).
    assert code in (0, -signal.SIGTERM), api_process.process.output()
    assert "Application shutdown complete" in api_process.process.output()
    assert seconds < 8  # streams ended at once; the 10 s grace was not waited out


async def long_log_behind_a_gate(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes, **extra: str
) -> tuple[TrellisProcess, str]:
    """An API, and the events path of a run whose log is 20,000 events (8 MB) long."""
    api_process, wf, run_id = await at_a_gate(temporal_env, tmp_path, processes, **extra)
    note = json.dumps({"type": "note", "runId": run_id, "text": "x" * 400})
    with sqlite3.connect(tmp_path / "trellis.db") as db:  # written at once
        db.executemany("INSERT INTO events (run_id, doc) VALUES (?, ?)", [(run_id, note)] * 20_000)
    return api_process, f"/api/v1/workflows/{wf}/runs/{run_id}/events"


def reader_of(api_process: TrellisProcess, path: str) -> socket.socket:
    """A connection asking for `path` with a small receive buffer, nothing read yet."""
    host, port = api_process.url.removeprefix("http://").split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect((host, int(port)))
    reader.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return reader


async def test_a_stream_whose_client_stopped_reading_does_not_hold_the_api_at_exit(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    # A client that stops reading a long log fills the socket's buffers: its response can
    # never end. The API waited the whole 10 s grace for it, then logged "ASGI callable
    # returned without completing response" at ERROR.
    api_process, path = await long_log_behind_a_gate(temporal_env, tmp_path, processes)
    stalled = reader_of(api_process, path)
    try:
        await asyncio.sleep(2)  # the API writes until the buffers are full
        code, seconds = await asyncio.to_thread(api_process.process.stop)
    finally:
        stalled.close()
    assert code in (0, -signal.SIGTERM), api_process.process.output()
    assert seconds < 7, seconds  # not the 10 s grace
    assert "without completing response" not in api_process.process.output()


async def test_a_stream_whose_client_reads_slowly_is_kept_through_the_grace(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    # Its writes are paused most of the time, as a stalled client's are; but what waits
    # for it goes down, so it is not dropped.
    api_process, path = await long_log_behind_a_gate(
        temporal_env, tmp_path, processes, TRELLIS_API_SHUTDOWN_GRACE_SECONDS="5"
    )
    slow = reader_of(api_process, path)
    slow.setblocking(False)
    got_after: list[float] = []
    try:
        await asyncio.sleep(2)
        stopping = asyncio.create_task(asyncio.to_thread(api_process.process.stop))
        began = time.monotonic()
        while not stopping.done():
            with contextlib.suppress(BlockingIOError):
                if slow.recv(1024):
                    got_after.append(time.monotonic() - began)
            await asyncio.sleep(0.05)
        code, _ = await stopping
    finally:
        slow.close()
    assert code in (0, -signal.SIGTERM), api_process.process.output()
    assert max(got_after) > 3.5, got_after  # still served after the stall checks


@pytest.mark.parametrize("api_workers", ["1", "2"])
async def test_a_request_the_shutdown_grace_cuts_off_is_answered_503_and_safe_to_repeat(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes, api_workers: str
) -> None:
    """An approval waiting for a worker when the API is stopped: once the API's grace has
    passed it is cancelled — answered 503 in the error body (uvicorn alone says a
    plain-text 500, which a client does not repeat); repeated later with its key, as the
    503 says, it is answered 200 and applies once (the 503 said such a repeat was 409).
    With `TRELLIS_API_WORKERS`, each of the API's processes keeps the same grace."""
    env = env_for(
        temporal_env,
        tmp_path,
        TRELLIS_API_SHUTDOWN_GRACE_SECONDS="1",
        TRELLIS_API_WORKERS=api_workers,
    )
    api_process = processes.api(env)
    worker = processes.worker(env)
    gate = step("Approve", "builtin:echo", id="gate", humanReview={"requiresConfirmation": True})
    decision = {"stepId": "gate", "resolution": "confirm"}
    keyed = {"Idempotency-Key": "cut-off-approval"}
    async with httpx.AsyncClient(base_url=api_process.url, timeout=30) as api:
        wf, run_id = await create_and_trigger(api, {"nodes": [gate]})
        await wait_for(api, wf, run_id, lambda r: r["status"] == "awaiting_approval")
        worker.kill()  # no worker takes the decision: the request waits
        approve = asyncio.create_task(
            api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/approve", json=decision, headers=keyed)
        )
        await asyncio.sleep(1.0)
        code, _ = await asyncio.to_thread(api_process.process.stop)
        answer = await asyncio.wait_for(approve, 10)

    assert code in (0, -signal.SIGTERM), api_process.process.output()
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "service_unavailable"
    assert answer.headers["retry-after"] == "1"
    advice = answer.json()["error"]["message"]
    assert "with the same Idempotency-Key it is applied once and answered as the first" in advice

    processes.worker(env)
    again = processes.api(env)
    async with httpx.AsyncClient(base_url=again.url, timeout=30) as api:
        url = f"/api/v1/workflows/{wf}/runs/{run_id}/approve"
        repeated = await api.post(url, json=decision, headers=keyed)
        # Applied by this repeat, or by the cut-off request after all: never twice.
        assert repeated.status_code == 200, repeated.text
        # Without the key, a repeat once it applied is 409, as the 503 says.
        unkeyed = await api.post(url, json=decision)
        assert unkeyed.status_code == 409, unkeyed.text
        run = await wait_for(api, wf, run_id, lambda r: r["status"] in TERMINAL)
    assert run["status"] == "completed", run
    assert len(run["resolvedRequirements"]) == 1
