"""Two workers and two API replicas on one Temporal server and one store: runs spread over
both workers, live events and approvals work through either API, and the two reconcilers
correct a run once."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.faults.harness import REPORTS, Load, create_workflow, effect_step
from tests.peers.catalog import Peers
from tests.support.processes import Processes, process_env

RUNS = 30


async def wait_until(api: str, wf: str, run_id: str, check: Any, within: float = 30) -> Any:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(base_url=api, timeout=5) as client:
        while True:
            run = (await client.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
            if check(run):
                return run
            assert time.monotonic() < deadline, run
            await asyncio.sleep(0.1)


@pytest.mark.long
async def test_two_workers_and_two_apis_share_the_work(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    # Started side by side: each takes seconds to import and connect.
    apis = await asyncio.gather(*(asyncio.to_thread(processes.api, env) for _ in range(2)))
    workers = await asyncio.gather(*(asyncio.to_thread(processes.worker, env) for _ in range(2)))
    urls = itertools.cycle([a.url for a in apis])
    async with httpx.AsyncClient(base_url=apis[0].url, timeout=10) as client:
        wf = await create_workflow(
            client, [effect_step(0.2, name="First"), effect_step(0.2, name="Second")]
        )
    began = time.monotonic()
    load = Load(lambda: next(urls), wf, RUNS)  # every request goes to the other replica
    await load.run()
    statuses = await load.settle(within=90)
    tally = load.tally("scale-out: 2 workers, 2 APIs", statuses, peers.mcp_stats)
    tally.seconds = round(time.monotonic() - began, 1)

    identities: set[str] = set()
    for run_id in load.accepted.values():
        history = await temporal_env.client.get_workflow_handle(run_id).fetch_history()
        for event in history.events:
            if event.HasField("activity_task_started_event_attributes"):
                identities.add(event.activity_task_started_event_attributes.identity)
    tally.notes.append(f"activities ran on {len(identities)} workers")
    REPORTS.append(tally)
    assert tally.lost == 0 and tally.duplicated == 0, tally
    assert {f"{w.pid}@" for w in workers} == {i.split("@")[0] + "@" for i in identities}

    await events_and_approvals_through_either_api_and_one_correction(
        temporal_env, apis[0].url, apis[1].url
    )


async def events_and_approvals_through_either_api_and_one_correction(
    temporal_env: WorkflowEnvironment, one: str, other: str
) -> None:
    """A gate approved through one API while the other streams it; a terminated run."""
    gate = step("Approve", "builtin:echo", id="gate", humanReview={"requiresConfirmation": True})
    async with (
        httpx.AsyncClient(base_url=one, timeout=10) as api_one,
        httpx.AsyncClient(base_url=other, timeout=10) as api_other,
    ):
        wf = await create_workflow(api_one, [gate])
        run_id = (await api_one.post(f"/api/v1/workflows/{wf}/runs", json={})).json()["runId"]
        await wait_until(one, wf, run_id, lambda r: r["status"] == "awaiting_approval")

        seen: list[str] = []

        async def follow() -> None:
            url = f"/api/v1/workflows/{wf}/runs/{run_id}/events"
            async with api_other.stream("GET", url, timeout=30) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        seen.append(line.removeprefix("event:").strip())

        follower = asyncio.create_task(follow())
        approved = await api_one.post(
            f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
            json={"stepId": "gate", "resolution": "confirm"},
        )
        assert approved.status_code == 200, approved.text
        await asyncio.wait_for(follower, 30)  # the stream on the other API saw the end
        assert seen[-1] == "run_completed", seen

        # A run terminated in Temporal: both workers' reconcilers see it; one corrects it.
        second = (await api_other.post(f"/api/v1/workflows/{wf}/runs", json={})).json()["runId"]
        await wait_until(other, wf, second, lambda r: r["status"] == "awaiting_approval")
        await temporal_env.client.get_workflow_handle(second).terminate(reason="scale-out")
        await wait_until(one, wf, second, lambda r: r["status"] == "failed")
        await asyncio.sleep(3)  # several passes of both reconcilers (every second)
        events = await api_one.get(f"/api/v1/workflows/{wf}/runs/{second}/events")
    corrections = [line for line in events.text.splitlines() if line == "event: run_failed"]
    assert len(corrections) == 1, events.text
