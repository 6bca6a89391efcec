"""The API SIGKILLed twice under load and restarted at once on its port: clients that
repeat unanswered triggers with their Idempotency-Key lose no run and start none twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.processes import Api, Processes, process_env

RUNS = 80


@pytest.mark.long
async def test_api_sigkill_and_restart_on_the_same_port_under_load(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    api: list[Api] = [processes.api(env)]
    processes.worker(env)
    async with httpx.AsyncClient(base_url=api[0].url, timeout=10) as client:
        wf = await create_workflow(client, [effect_step(seconds=0.1)])
    load = Load(lambda: api[0].url, wf, RUNS)
    began = time.monotonic()

    async def kill_twice() -> None:
        for pause in (0.5, 1.5):
            await asyncio.sleep(pause)
            api[0].process.kill()
            api[0] = await asyncio.to_thread(processes.api, env, api[0].port)

    await asyncio.gather(load.run(concurrency=16), kill_twice())
    statuses = await load.settle(within=120)
    tally = load.tally("API SIGKILL x2, restart on the same port", statuses, peers.mcp_stats)
    tally.seconds = round(time.monotonic() - began, 1)
    REPORTS.append(tally)

    assert tally.started == RUNS
    assert tally.lost == 0, (tally, statuses)
    assert tally.duplicated == 0, tally
    assert load.retries > 0  # the kills did cut triggers off
