"""The worker SIGKILLed three times under load: no run lost, no side effect performed twice,
no run event logged twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.processes import Processes, TrellisProcess, process_env

RUNS = 60


async def test_worker_sigkill_three_times_under_load(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    api = processes.api(env)
    worker: list[TrellisProcess] = [processes.worker(env)]
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf = await create_workflow(client, [effect_step(seconds=0.5)])
    load = Load(lambda: api.url, wf, RUNS)
    began = time.monotonic()

    async def kill_three_times() -> None:
        for _ in range(3):
            await asyncio.sleep(1.5)
            worker[0].kill()
            worker[0] = await asyncio.to_thread(processes.worker, env)

    await asyncio.gather(load.run(), kill_three_times())
    statuses = await load.settle(within=120)
    tally = load.tally("worker SIGKILL x3", statuses, peers.mcp_stats)
    tally.seconds = round(time.monotonic() - began, 1)
    REPORTS.append(tally)

    assert tally.started == RUNS
    assert tally.lost == 0, (tally, statuses)
    assert tally.duplicated == 0, tally
    # Each run's start is written by its step's activity (the outbox's hand-off), which a
    # kill makes run again: still logged once.
    assert await load.run_events_logged_twice() == {}
