"""An MCP tool that never answers: the step's `timeoutSeconds` and retries apply, and the
run moves on (or fails) instead of hanging."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.faults.harness import REPORTS, Load, create_workflow
from tests.peers.catalog import Peers
from tests.support.processes import Processes, process_env

RUNS = 10


def hanging(on_error: str) -> dict[str, object]:
    return step(
        "Hang",
        "peer-http/sleepy",
        {"seconds": 20},  # far beyond the 1 s timeout
        stepConfig={
            "maxRetries": 2,
            "onError": on_error,
            "timeoutSeconds": 1,
            "backoffBaseSeconds": 0.2,
            "backoffMaxSeconds": 0.2,
        },
    )


@pytest.mark.long
async def test_a_hanging_mcp_tool_times_out_per_attempt_and_the_runs_end(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    api = processes.api(env)
    processes.worker(env)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        skipping = await create_workflow(client, [hanging("skip"), step("After")])
        failing = await create_workflow(client, [hanging("fail"), step("After")])
    began = time.monotonic()
    loads = [Load(lambda: api.url, wf, RUNS // 2) for wf in (skipping, failing)]
    for load in loads:
        await load.run()
    skipped, failed = [await load.settle(within=60) for load in loads]
    seconds = time.monotonic() - began

    tally = loads[0].tally("MCP tool hangs (onError skip)", skipped, None)
    tally.seconds = round(seconds, 1)
    REPORTS.append(tally)
    assert tally.lost == 0, skipped
    assert set(failed.values()) == {"failed"}, failed  # ended, not hanging
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        run_id = next(iter(failed))
        run = (await client.get(f"/api/v1/workflows/{failing}/runs/{run_id}")).json()
    [hang] = [n for n in run["nodeRuns"] if n["nodeName"] == "Hang"]
    assert hang["attempt"] == 3  # every attempt timed out after 1 s, then was retried
    assert "timed out" in hang["error"].lower() or "timeout" in hang["error"].lower(), hang
    assert seconds < 45
