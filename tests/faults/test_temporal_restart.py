"""The Temporal dev server SIGKILLed under load and restarted on the same port and file:
running runs go on, triggers refused meanwhile are started by their retry."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx

from app.platform.devserver import temporal_binary, wait_for_temporal
from app.platform.devserver_flags import dev_server_command
from app.settings import Settings
from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.processes import Processes, TrellisProcess, process_env
from tests.support.server import free_port

RUNS = 40


def start_temporal(processes: Processes, port: int, db_file: Path) -> TrellisProcess:
    argv = dev_server_command(
        temporal_binary(), port=port, ui_port=free_port(), db_file=db_file, namespace="default"
    )
    argv += ["--headless"]
    return processes.spawn("temporal", argv, dict(os.environ))


async def test_temporal_sigkill_and_restart_on_the_same_file_under_load(
    peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    port, db_file = free_port(), tmp_path / "temporal.db"
    address = f"127.0.0.1:{port}"
    temporal = start_temporal(processes, port, db_file)
    await wait_for_temporal(Settings(temporal_address=address), within=60)
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
        restarted = start_temporal(processes, port, db_file)
        await wait_for_temporal(Settings(temporal_address=address), within=60)
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
