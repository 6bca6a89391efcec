"""The worker SIGKILLed three times under load: no run lost, no side effect performed twice,
no run event logged twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.events.sse import read_all
from tests.faults.harness import REPORTS, TERMINAL, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.processes import Processes, TrellisProcess, process_env
from tests.support.server import free_port

RUNS = 60


@pytest.mark.long
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


@pytest.mark.long
async def test_steps_with_no_retries_outlive_their_worker_being_killed(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    """The contract's default stepConfig (maxRetries 0): a crash is not the step failing.
    Temporal notices the dead worker by its missing heartbeats; the workflow runs the lost
    attempt again on the next worker. An A2A step's next attempt follows the task the lost
    one started (named in its heartbeats) rather than sending the message again."""
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    api = processes.api(env)
    first = processes.worker(env)
    delay = step("Wait", "builtin:delay", {"seconds": 6})
    agent = step("Ask", "slow-agent", {"task": "once", "seconds": 6})
    sent = peers.agent_stats.calls["slow-agent"]
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        runs = [await create_and_trigger(client, {"nodes": [node]}) for node in (delay, agent)]
        for wf, run_id in runs:
            await wait_for(client, wf, run_id, lambda r: r["nodeRuns"][:1] != [])  # started
        # Its task's id goes out with the A2A step's heartbeats from the first second on
        # (Temporal sends one at once, then at most one a second).
        await asyncio.sleep(3)
        first.kill()
        processes.worker(env)
        # Within the 30 s heartbeat timeout, the attempts again, and some slack.
        waited, asked = [
            await wait_for(client, wf, run_id, lambda r: r["status"] in TERMINAL, within=75)
            for wf, run_id in runs
        ]

    for run in (waited, asked):
        assert run["status"] == "completed", run
        [node_run] = run["nodeRuns"]
        assert (node_run["status"], node_run["attempt"]) == ("completed", 2), node_run
    # The agent was asked once: the second attempt got the first attempt's task's answer.
    assert peers.agent_stats.calls["slow-agent"] == sent + 1
    assert asked["nodeRuns"][0]["outputSnapshot"]["run"]["attempt"] == 1


@pytest.mark.long
async def test_a_step_with_a_short_timeout_outlives_its_worker_being_killed(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    """A dead worker was noticed only after 30 s without heartbeats, so a step whose own
    timeout was shorter timed out first and failed the run, the worker back at once. The
    lost attempt is said by the next one (it left no trace: no log line, no metric, no
    error, though its call was made twice)."""
    metrics_port = free_port()
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_WORKER_METRICS_PORT=str(metrics_port),
    )
    api = processes.api(env)
    first = processes.worker(env)
    wait = step("Wait", "builtin:delay", {"seconds": 6}, stepConfig={"timeoutSeconds": 20})
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf, run_id = await create_and_trigger(client, {"nodes": [wait]})
        await wait_for(client, wf, run_id, lambda r: r["nodeRuns"][:1] != [])  # started
        await asyncio.sleep(1.5)
        first.kill()
        second = processes.worker(env)
        # Noticed within a third of the 20 s (6.7 s), then the 6 s step again.
        run = await wait_for(client, wf, run_id, lambda r: r["status"] in TERMINAL, within=40)
        events = await read_all(client, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
        metrics = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
    assert run["status"] == "completed", run
    [node_run] = run["nodeRuns"]
    assert (node_run["status"], node_run["attempt"]) == ("completed", 2), node_run
    retried = [m.json() for m in events if m.event == "node_started"][-1]
    lost = "attempt 1 was lost with its worker"
    assert retried["attempt"] == 2 and retried["previousError"].startswith(lost), retried
    assert "while waiting for builtin:delay" in retried["previousError"]
    assert f"step 'Wait' {lost}" in second.output()
    assert 'trellis_step_attempts_lost_total{executor_kind="builtin"} 1.0' in metrics
