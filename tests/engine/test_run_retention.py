"""Run retention (TRELLIS_RUN_RETENTION_DAYS): the worker's reconciler deletes the runs that
ended longer ago than the retention, with their node runs and events; open runs stay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from temporalio.testing import WorkflowEnvironment

from activities.metrics import RunMetrics
from app.reconciler import Reconciler
from tests.builders import delay, echo, http_step
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.processes import Processes, process_env
from tests.support.server import free_port

RETENTION = timedelta(seconds=4)
GATE = {"requiresConfirmation": True}
CONFIRM = {"stepId": "send", "resolution": "confirm"}


@contextlib.asynccontextmanager
async def sweeping(p: Platform, metrics: RunMetrics) -> AsyncIterator[None]:
    """The worker's reconciler with the retention, sweeping every 0.2 s."""
    reconciler = Reconciler(
        p.client,
        p.store,
        task_queue=p.task_queue,
        interval=0.2,
        metrics=metrics,
        run_retention=RETENTION,
        retention_every=timedelta(seconds=0.2),
    )
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        yield
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


def url(wf: str, run_id: str) -> str:
    return f"/api/v1/workflows/{wf}/runs/{run_id}"


async def test_runs_ended_before_the_retention_go_and_open_and_recent_ones_stay(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    p = platform
    caplog.set_level(logging.INFO, "trellis.reconciler")
    registry = CollectorRegistry()
    metrics = RunMetrics(registry)
    # Old enough: a completed, a failed and a cancelled run, and a run that passed its gate
    # and completed, whose replay now waits at the same gate (open, as old as they are).
    done_wf, done = await start(p, [echo("a"), echo("b")])
    assert (await p.wait(done_wf, done))["status"] == "completed"
    bad_wf, bad = await start(p, [http_step("bad", f"{p.peer_url}/status/404")])
    assert (await p.wait(bad_wf, bad))["status"] == "failed"
    slow_wf, stopped = await start(p, [delay("slow", 30)])
    await p.wait(slow_wf, stopped, {"running"})
    assert (await control(p, slow_wf, stopped, "cancel")).status_code == 200
    assert (await p.wait(slow_wf, stopped))["status"] == "cancelled"
    gate_wf, parent = await start(p, [echo("send", GATE)])
    await wait_for_gate(p, gate_wf, parent, "send")
    assert (await approve(p, gate_wf, parent, **CONFIRM)).status_code == 200
    assert (await p.wait(gate_wf, parent))["status"] == "completed"
    replayed = await p.api.post(url(gate_wf, parent) + "/replay")
    assert replayed.status_code == 202, replayed.text
    child = replayed.json()["runId"]
    await wait_for_gate(p, gate_wf, child, "send")
    old = {done: done_wf, bad: bad_wf, stopped: slow_wf, parent: gate_wf}
    for run_id in old:
        assert await p.store.list_events(run_id, 0, 100)
    assert await p.store.list_node_runs(list(old))

    await asyncio.sleep(RETENTION.total_seconds() + 0.5)
    # Ended within the retention: stays.
    recent_wf, recent = await start(p, [echo("a")])
    assert (await p.wait(recent_wf, recent))["status"] == "completed"

    async with sweeping(p, metrics):
        for run_id, wf in old.items():
            await eventually(
                lambda wf=wf, run_id=run_id: _gone(p, wf, run_id), within=RETENTION.total_seconds()
            )
    for run_id, wf in old.items():
        assert (await p.api.get(url(wf, run_id) + "/nodes")).status_code == 404
        assert (await p.api.get(url(wf, run_id) + "/events")).status_code == 404
        assert await p.store.list_events(run_id, 0, 100) == []
        listed = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()
        assert run_id not in [r["id"] for r in listed["runs"]]
    assert await p.store.list_node_runs(list(old)) == []
    assert registry.get_sample_value("trellis_runs_deleted_total") == len(old)
    said = [r for r in caplog.records if r.getMessage().startswith("run retention deleted")]
    assert said and sum(int(r.args[0]) for r in said) == len(old)  # type: ignore[index]

    # The recent run stays whole.
    assert (await p.api.get(url(recent_wf, recent))).json()["status"] == "completed"
    assert await p.store.list_events(recent, 0, 100)
    # The open child stays; its parent is gone: it still reads, naming the parent, whose
    # own pages (and its children's) are 404.
    kept = await p.api.get(url(gate_wf, child))
    assert kept.status_code == 200, kept.text
    assert kept.json()["status"] == "awaiting_approval"
    assert kept.json()["parentRunId"] == parent
    assert (await p.api.get(url(gate_wf, parent) + "/children")).status_code == 404
    listed = (await p.api.get(f"/api/v1/workflows/{gate_wf}/runs")).json()
    assert [r["id"] for r in listed["runs"]] == [child]
    # ... and is approved and completes.
    assert (await approve(p, gate_wf, child, **CONFIRM)).status_code == 200
    assert (await p.wait(gate_wf, child))["status"] == "completed"


async def _gone(p: Platform, wf: str, run_id: str) -> bool:
    return (await p.api.get(url(wf, run_id))).status_code == 404


async def test_a_worker_started_with_the_setting_deletes_at_its_start(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    # `trellis worker` as a process: the setting reaches its reconciler, whose first pass
    # sweeps (the next is 10 minutes later).
    port = free_port()
    env = process_env(
        tmp_path / "data",
        temporal_env.client.service_client.config.target_host,
        TRELLIS_RUN_RETENTION_DAYS=str(2 / 86_400),  # two seconds
        TRELLIS_WORKER_METRICS_PORT=str(port),
    )
    api = await processes.api_and_worker(env)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf, run_id = await create_and_trigger(client, {"nodes": [echo("a")]})
        await wait_for(client, wf, run_id, lambda r: r["status"] == "completed")
        (first,) = [w for w in processes.started if w.role == "worker"]
        assert first.stop()[0] == 0
        await asyncio.sleep(2.5)
        assert (await client.get(url(wf, run_id))).status_code == 200
        worker = await asyncio.to_thread(processes.worker, env)
        await eventually(lambda: _gone_at(client, url(wf, run_id)), within=10)
        metrics = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    assert "trellis_runs_deleted_total 1.0" in metrics
    assert "run retention deleted 1 run(s) that ended before" in worker.output()


async def _gone_at(client: httpx.AsyncClient, path: str) -> bool:
    return (await client.get(path)).status_code == 404
