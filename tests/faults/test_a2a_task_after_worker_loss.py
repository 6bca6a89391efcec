"""An A2A step's worker killed, its run cancelled before a worker is back: the next worker
ends the run `cancelled` and cancels the task the step left running at the agent
(`tasks/cancel`, once), by the note the step kept of it in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.faults.harness import TERMINAL
from tests.peers.catalog import Peers
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.polling import eventually
from tests.support.processes import Processes, process_env


async def task_state(peers: Peers, agent: str, task_id: str) -> str:
    """The task's state as the agent tells it (`GetTask`)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    async with httpx.AsyncClient(timeout=10) as http:
        version = {"A2A-Version": "1.0"}
        answer = await http.post(peers.agent_url(agent), json=request, headers=version)
    state: str = answer.json()["result"]["status"]["state"]
    return state


@pytest.mark.long
async def test_a_task_left_by_a_killed_worker_is_cancelled_by_the_next_worker(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
        TRELLIS_A2A_TASK_SWEEP_SECONDS="1",
    )
    api = processes.api(env)
    first = processes.worker(env)
    stats = peers.agent_stats
    asked = stats.cancel_requests["slow-agent"]
    ask = step("Ask", "slow-agent", {"task": "think long", "seconds": 300})
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf, run_id = await create_and_trigger(client, {"nodes": [ask]})
        run = await wait_for(client, wf, run_id, lambda r: r["nodeRuns"][:1] != [])
        node_run_id = run["nodeRuns"][0]["id"]
        task_id = await eventually(lambda: stats.task_of_node_run.get(node_run_id))
        await asyncio.sleep(1)  # the step notes its task once it has worked 0.2 s
        first.kill()
        cancelled = await client.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text

        # The next worker ends the run; its sweeps find the task left running at the agent.
        second = processes.worker(env)
        run = await wait_for(client, wf, run_id, lambda r: r["status"] in TERMINAL, within=20)
        assert run["status"] == "cancelled", run
        await eventually(lambda: task_id in asked, within=20)
        assert await task_state(peers, "slow-agent", task_id) == "TASK_STATE_CANCELED"
        await asyncio.sleep(3)  # three more sweeps: nothing more is sent

    assert asked.count(task_id) == 1, asked
    assert f"cancelled A2A task {task_id} of agent 'slow-agent'" in second.output()
