"""An operator pausing, unpausing or resetting a running step's activity in Temporal (the
Web UI's buttons, `temporal activity pause|unpause|reset`): a pause holds the step, which
is not cancelled and runs again on unpause; a reset runs it again with a fresh set of
attempts, and the run goes on."""

from __future__ import annotations

import asyncio
import json
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflowservice.v1 import (
    PauseActivityRequest,
    ResetActivityRequest,
    UnpauseActivityRequest,
)
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.faults.harness import create_workflow
from tests.peers.catalog import Peers
from tests.support.processes import Processes, process_env

# Long enough for the attempt to hear of a pause or reset (its next heartbeat, within a
# second), short enough for the test to wait out the attempts that complete.
NAP_SECONDS = 3


class _Run:
    """One run of `nodes` on an API and worker of their own; what its node runs showed."""

    def __init__(self, api: str, temporal: Client) -> None:
        self.api = httpx.AsyncClient(base_url=api, timeout=10)
        self.temporal = temporal
        self.workflow_id = self.run_id = ""
        self.seen: set[tuple[str, str, int]] = set()  # (node name, status, attempt)

    async def start(self, nodes: list[dict[str, Any]]) -> None:
        self.workflow_id = await create_workflow(self.api, nodes)
        started = await self.api.post(f"/api/v1/workflows/{self.workflow_id}/runs", json={})
        assert started.status_code == 202, started.text
        self.run_id = started.json()["runId"]

    async def read(self) -> dict[str, Any]:
        path = f"/api/v1/workflows/{self.workflow_id}/runs/{self.run_id}"
        run: dict[str, Any] = (await self.api.get(path)).json()
        self.seen |= {(n["nodeName"], n["status"], n["attempt"]) for n in run["nodeRuns"]}
        return run

    async def node(self, name: str, within: float = 30, **expected: Any) -> dict[str, Any]:
        """The node run `name` once its fields hold `expected`."""
        deadline = time.monotonic() + within
        while True:
            found = [n for n in (await self.read())["nodeRuns"] if n["nodeName"] == name]
            if found and all(found[0].get(k) == v for k, v in expected.items()):
                return found[0]
            assert time.monotonic() < deadline, found
            await asyncio.sleep(0.1)

    async def ended(self, within: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while (run := await self.read())["status"] not in {"completed", "failed", "cancelled"}:
            assert time.monotonic() < deadline, run
            await asyncio.sleep(0.1)
        return run

    async def events(self) -> list[str]:
        """The run's event log: each event's name, then its data line."""
        path = f"/api/v1/workflows/{self.workflow_id}/runs/{self.run_id}/events"
        lines = (await self.api.get(path)).text.splitlines()
        return [line.split(": ", 1)[1] for line in lines if line.startswith(("event:", "data:"))]

    async def activity_state(self, activity_id: str) -> PendingActivityState.ValueType | None:
        described = await self.temporal.get_workflow_handle(self.run_id).describe()
        for pending in described.raw_description.pending_activities:
            if pending.activity_id == activity_id:
                return pending.state
        return None

    async def until_state(self, activity_id: str, state: PendingActivityState.ValueType) -> None:
        deadline = time.monotonic() + 30
        while await self.activity_state(activity_id) != state:
            assert time.monotonic() < deadline, await self.activity_state(activity_id)
            await asyncio.sleep(0.1)

    def execution(self) -> WorkflowExecution:
        return WorkflowExecution(workflow_id=self.run_id)


async def _platform(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> str:
    """An API and a worker of their own, calling the test peers; the API's URL."""
    env = process_env(
        tmp_path,
        temporal_env.client.service_client.config.target_host,
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
    )
    api = processes.api(env)
    processes.worker(env)
    return api.url


def _nap(**step_config: Any) -> dict[str, Any]:
    config = {"timeoutSeconds": 60, **step_config}
    return step("Nap", "peer-http/sleepy", {"seconds": NAP_SECONDS}, stepConfig=config)


async def test_a_step_paused_in_temporal_is_held_running_and_runs_again_on_unpause(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    client = temporal_env.client
    run = _Run(await _platform(temporal_env, peers, tmp_path, processes), client)
    await run.start([_nap(), step("After")])  # no retries: held all the same
    nap = await run.node("Nap", status="running", attempt=1)

    await client.workflow_service.pause_activity(
        PauseActivityRequest(
            namespace=client.namespace, execution=run.execution(), id=nap["id"], reason="test"
        )
    )
    # Temporal holds the attempt the pause cut off: no retry, whatever the policy says.
    await run.until_state(nap["id"], PendingActivityState.PENDING_ACTIVITY_STATE_PAUSED)
    held = await run.node("Nap", attempt=1)
    assert held["status"] == "running", held
    assert "paused" in (held["error"] or ""), held
    assert (await run.read())["status"] == "running"

    await client.workflow_service.unpause_activity(
        UnpauseActivityRequest(namespace=client.namespace, execution=run.execution(), id=nap["id"])
    )
    ended = await run.ended()

    assert ended["status"] == "completed", ended
    done = await run.node("Nap")
    assert (done["status"], done["attempt"]) == ("completed", 2), done
    assert not [s for s in run.seen if s[1] == "cancelled"], run.seen
    events = await run.events()
    assert "node_cancelled" not in events, events
    assert events.count("node_started") == 3, events  # Nap twice, After once
    started = [json.loads(data) for name, data in pairwise(events) if name == "node_started"]
    assert "paused in Temporal" in started[1]["previousError"], started


async def test_a_step_reset_in_temporal_runs_again_and_the_run_goes_on(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    client = temporal_env.client
    run = _Run(await _platform(temporal_env, peers, tmp_path, processes), client)
    naps = peers.mcp_stats.naps["begun"]
    await run.start([_nap(), step("After")])  # no retries
    nap = await run.node("Nap", status="running", attempt=1)

    await client.workflow_service.reset_activity(
        ResetActivityRequest(namespace=client.namespace, execution=run.execution(), id=nap["id"])
    )
    ended = await run.ended()

    assert ended["status"] == "completed", ended
    done = await run.node("Nap")
    assert (done["status"], done["attempt"]) == ("completed", 2), done
    assert peers.mcp_stats.naps["begun"] - naps == 2  # the tool was called again
    events = await run.events()
    assert not {"node_cancelled", "node_failed", "run_failed"} & set(events), events


async def test_a_step_paused_then_reset_in_temporal_runs_again_numbered_on(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    # Reset, a held activity starts again at Temporal's attempt 1: its node run had
    # attempt 2 already, and a write of attempt 1 would be refused as older.
    client = temporal_env.client
    run = _Run(await _platform(temporal_env, peers, tmp_path, processes), client)
    await run.start([_nap(maxRetries=2, backoffBaseSeconds=0.1), step("After")])
    nap = await run.node("Nap", status="running", attempt=1)
    request = {"namespace": client.namespace, "execution": run.execution(), "id": nap["id"]}
    await client.workflow_service.reset_activity(ResetActivityRequest(**request))
    await run.node("Nap", status="running", attempt=2, error=None)
    request["id"] = f"{nap['id']}.reset1"  # the step's activity since its reset
    await client.workflow_service.pause_activity(PauseActivityRequest(**request))
    await run.until_state(request["id"], PendingActivityState.PENDING_ACTIVITY_STATE_PAUSED)

    await client.workflow_service.reset_activity(ResetActivityRequest(**request))
    ended = await run.ended()

    assert ended["status"] == "completed", ended
    done = await run.node("Nap")
    assert (done["status"], done["attempt"]) == ("completed", 3), done
    assert not [s for s in run.seen if s[1] == "cancelled"], run.seen


async def test_a_run_cancelled_while_its_step_is_paused_ends_cancelled(
    temporal_env: WorkflowEnvironment, peers: Peers, tmp_path: Path, processes: Processes
) -> None:
    client = temporal_env.client
    run = _Run(await _platform(temporal_env, peers, tmp_path, processes), client)
    await run.start([_nap(), step("After")])
    nap = await run.node("Nap", status="running", attempt=1)
    request = {"namespace": client.namespace, "execution": run.execution(), "id": nap["id"]}
    await client.workflow_service.pause_activity(PauseActivityRequest(**request))
    await run.until_state(nap["id"], PendingActivityState.PENDING_ACTIVITY_STATE_PAUSED)
    assert (await run.node("Nap"))["status"] == "running"

    path = f"/api/v1/workflows/{run.workflow_id}/runs/{run.run_id}/cancel"
    assert (await run.api.post(path)).status_code == 200
    ended = await run.ended()

    assert ended["status"] == "cancelled", ended
    # Cancelled, not "cancelled (its last attempt failed: …)": a pause is no failure.
    assert (await run.node("Nap"))["error"] == "cancelled"
