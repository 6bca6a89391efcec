"""The Temporal dev server SIGKILLed under load and restarted on the same port and file:
running runs go on, triggers refused meanwhile are started by their retry."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.own_temporal import own_temporal, start_temporal
from tests.support.processes import Processes, process_env

RUNS = 40


async def test_temporal_sigkill_and_restart_on_the_same_file_under_load(
    peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    db_file = tmp_path / "temporal.db"
    temporal, port = await own_temporal(processes, db_file)
    address = f"127.0.0.1:{port}"
    env = process_env(tmp_path, address, TRELLIS_EXECUTORS_FILE=str(peers.catalog_path))
    api = processes.api(env)
    processes.worker(env)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf = await create_workflow(client, [effect_step(seconds=1.0)])
    load = Load(lambda: api.url, wf, RUNS)
    began = time.monotonic()

    async def kill_and_restart() -> None:
        await asyncio.sleep(1.0)
        temporal.kill()
        restarted = await start_temporal(processes, port, db_file)
        assert restarted.running()

    # Triggers trickle in over 4 s, so some arrive while Temporal is down.
    await asyncio.gather(load.run(within=150, spacing=0.1), kill_and_restart())
    statuses = await load.settle(within=150)
    tally = load.tally("Temporal SIGKILL, restart on the same file", statuses, peers.mcp_stats)
    tally.seconds = round(time.monotonic() - began, 1)
    REPORTS.append(tally)

    assert tally.started == RUNS
    assert tally.lost == 0, (tally, statuses)
    assert tally.duplicated == 0, tally
    # Triggers sent during the outage waited: Temporal's client retries an unavailable
    # server, so they were answered once it was back (no 503 at this length of outage).
    assert len(load.accepted) == RUNS
