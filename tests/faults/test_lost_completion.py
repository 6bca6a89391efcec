"""A step whose end landed in the store but whose completion never reached Temporal (its
worker died meanwhile) is not run again: the next attempt answers with the stored result,
so the tool is called once and the run's log says `node_completed` once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.frozen import frozen
from tests.support.own_temporal import own_temporal
from tests.support.processes import Processes, process_env

RUNS = 5


async def node_runs(api: str, load: Load) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=api, timeout=5) as client:
        for run_id in load.accepted.values():
            run = (await client.get(f"/api/v1/workflows/{load.workflow_id}/runs/{run_id}")).json()
            found += run["nodeRuns"]
    return found


async def until(check: Any, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)


@pytest.mark.long
async def test_a_completed_attempt_lost_with_its_worker_is_not_run_again(
    peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    temporal, port = await own_temporal(processes, tmp_path / "temporal.db")
    address = f"127.0.0.1:{port}"
    env = process_env(tmp_path, address, TRELLIS_EXECUTORS_FILE=str(peers.catalog_path))
    api = processes.api(env)
    worker = processes.worker(env)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf = await create_workflow(client, [effect_step(seconds=1.5, timeout_seconds=5)])
    load = Load(lambda: api.url, wf, RUNS)
    began = time.monotonic()
    await load.run()

    async def all_in(statuses: set[str]) -> bool:
        found = await node_runs(api.url, load)
        return len(found) == RUNS and all(n["status"] in statuses for n in found)

    await until(lambda: all_in({"running"}))
    # Temporal frozen: each step's end lands in the store (the API reads it there), but
    # its completion cannot reach Temporal before the worker dies.
    with frozen(temporal.pid):
        await until(lambda: all_in({"completed"}))
        worker.kill()
    processes.worker(env)
    statuses = await load.settle(within=90)
    tally = load.tally("completion lost with its worker", statuses, peers.mcp_stats)
    tally.seconds = round(time.monotonic() - began, 1)
    REPORTS.append(tally)

    assert tally.lost == 0, (tally, statuses)
    assert tally.duplicated == 0, tally
    assert tally.reexecuted == 0, tally  # the tool was called once per node run
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        for run_id in load.accepted.values():
            events = await client.get(f"/api/v1/workflows/{wf}/runs/{run_id}/events")
            completions = events.text.splitlines().count("event: node_completed")
            assert completions == 1, events.text
    assert {(n["status"], n["attempt"]) for n in await node_runs(api.url, load)} == {
        ("completed", 1)
    }
