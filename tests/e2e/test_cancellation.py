"""Cancelling a run (from the Temporal client, as the Web UI does) reaches the running step."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tests.builders import parallel, step
from tests.e2e.helpers import node_runs
from tests.events.sse import read_all
from tests.peers.catalog import Peers
from tests.support.platform import Platform
from tests.support.polling import eventually


async def start_and_cancel(platform: Platform, node: dict[str, Any], started: Any) -> Any:
    """Run a one-step workflow, cancel it once `started()` holds, return the final run."""
    workflow_id = await platform.create({"nodes": [node]})
    run_id = await platform.trigger(workflow_id)
    await eventually(started)
    await platform.client.get_workflow_handle(run_id).cancel()
    return await platform.wait(workflow_id, run_id)


async def test_a_run_cancelled_during_an_agent_call_ends_cancelled(
    platform: Platform, peers: Peers
) -> None:
    calls = peers.agent_stats.calls["slow-agent"]

    run = await start_and_cancel(
        platform,
        step("Think Slowly", "slow-agent", {"seconds": 30}),
        lambda: peers.agent_stats.calls["slow-agent"] > calls,
    )

    assert run["status"] == "cancelled", run
    assert node_runs(run)["Think Slowly"]["status"] == "cancelled"


async def test_a_run_cancelled_during_a_tool_call_ends_cancelled(
    platform: Platform, peers: Peers
) -> None:
    calls = peers.mcp_stats.methods["tools/call"]

    run = await start_and_cancel(
        platform,
        step("Nap", "sleepy", {"seconds": 3}),
        lambda: peers.mcp_stats.methods["tools/call"] > calls,
    )

    assert run["status"] == "cancelled", run
    assert node_runs(run)["Nap"]["status"] == "cancelled"


async def test_cancelling_a_run_cancels_the_agents_task_within_seconds(
    platform: Platform, peers: Peers
) -> None:
    stats = peers.agent_stats
    calls, cancellations = stats.calls["slow-agent"], stats.cancellations["slow-agent"]

    run = await start_and_cancel(
        platform,
        step("Think Slowly", "slow-agent", {"seconds": 30}),
        lambda: stats.calls["slow-agent"] > calls,
    )

    assert run["status"] == "cancelled", run
    await eventually(lambda: stats.cancellations["slow-agent"] > cancellations, within=5)


async def test_cancelling_a_run_through_the_api_cancels_the_tool_call_on_its_server(
    platform: Platform, peers: Peers
) -> None:
    naps = peers.mcp_stats.naps
    begun, cancelled = naps["begun"], naps["cancelled"]
    workflow_id = await platform.create({"nodes": [step("Nap", "sleepy", {"seconds": 30})]})
    run_id = await platform.trigger(workflow_id)
    await eventually(lambda: naps["begun"] > begun)

    response = await platform.api.post(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/cancel")

    assert response.status_code == 200, response.text
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "cancelled", run
    assert node_runs(run)["Nap"]["status"] == "cancelled"


async def test_a_cancelled_runs_step_leaves_no_warning_traceback_in_the_log(
    platform: Platform, peers: Peers, caplog: pytest.LogCaptureFixture
) -> None:
    # The run closes before its step hears the cancel; the SDK logged that attempt's end
    # at WARNING with a traceback, as if it had failed (found by a soak).
    caplog.set_level(logging.DEBUG)
    naps = peers.mcp_stats.naps
    begun, cancelled = naps["begun"], naps["cancelled"]
    run = await start_and_cancel(
        platform, step("Nap", "sleepy", {"seconds": 30}), lambda: naps["begun"] > begun
    )
    assert run["status"] == "cancelled", run
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)
    await asyncio.sleep(0.5)  # the attempt's own end, after its tool call's
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info]
    assert loud == [], [r.getMessage() for r in loud]
    # Nor a line saying the step failed: `run cancelled` says all (found by an audit).
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert not [m for m in said if "attempt 1 failed" in m], said


async def test_a_tool_call_past_its_step_timeout_is_cancelled_on_its_server(
    platform: Platform, peers: Peers
) -> None:
    naps = peers.mcp_stats.naps
    cancelled = naps["cancelled"]
    nap = step("Nap", "sleepy", {"seconds": 30}, stepConfig={"timeoutSeconds": 1})

    run = await platform.run({"nodes": [nap]})

    assert run["status"] == "failed", run
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)


# A step's first write (its `running`, with `node_started`) waits RUNNING_AFTER_SECONDS
# (0.2 s); a cancel that ends the node run before it used to leave the node run saying
# it never started (attempt 0, no startedAt, no inputSnapshot) while its tool had run.


async def test_a_tool_call_cancelled_in_its_first_moments_shows_it_was_called(
    platform: Platform, peers: Peers
) -> None:
    naps = peers.mcp_stats.naps
    begun, cancelled = naps["begun"], naps["cancelled"]
    workflow_id = await platform.create({"nodes": [step("Nap", "sleepy", {"seconds": 5})]})
    run_id = await platform.trigger(workflow_id)
    await eventually(lambda: naps["begun"] > begun, every=0.005)

    response = await platform.api.post(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/cancel")

    assert response.status_code == 200, response.text
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "cancelled", run
    # The attempt hears the cancel at its next heartbeat (~1 s), its tool cancelled then.
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)
    nap = await _started(platform, workflow_id, run_id, "Nap")
    assert nap["status"] == "cancelled" and nap["error"] == "cancelled", nap
    assert nap["attempt"] == 1 and nap["inputSnapshot"] == {"seconds": 5}, nap
    assert nap["startedAt"] <= nap["finishedAt"], nap
    await _assert_log_ends_with_the_cancel(platform, workflow_id, run_id, nap, "run_cancelled")


async def test_a_sibling_cancelled_in_its_first_moments_by_a_failing_one_shows_it_was_called(
    platform: Platform, peers: Peers
) -> None:
    naps = peers.mcp_stats.naps
    begun, cancelled = naps["begun"], naps["cancelled"]
    # The failing call answers after its sibling's tool began, well inside its 0.2 s.
    failing = step("Broken", "broken", {"seconds": 0.05})
    fan = parallel("fan", step("Nap", "sleepy", {"seconds": 5}), failing)
    workflow_id = await platform.create({"nodes": [fan]})
    run_id = await platform.trigger(workflow_id)

    run = await platform.wait(workflow_id, run_id)

    assert run["status"] == "failed", run
    assert naps["begun"] > begun
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)
    nap = await _started(platform, workflow_id, run_id, "Nap")
    assert nap["status"] == "cancelled", nap
    assert nap["error"] == "cancelled: 'Broken' failed beside it", nap
    assert nap["attempt"] == 1 and nap["inputSnapshot"] == {"seconds": 5}, nap
    assert nap["startedAt"] <= nap["finishedAt"], nap
    await _assert_log_ends_with_the_cancel(platform, workflow_id, run_id, nap, "run_failed")


async def _started(platform: Platform, workflow_id: str, run_id: str, name: str) -> dict[str, Any]:
    """The node run once its attempt's write landed (up to a heartbeat after the run's end)."""

    async def started() -> dict[str, Any] | None:
        run = await platform.wait(workflow_id, run_id)
        found = node_runs(run)[name]
        return found if found["attempt"] >= 1 else None

    await eventually(started, within=5)
    # Time enough for the attempt's last write, were it to change anything.
    await asyncio.sleep(0.3)
    return node_runs(await platform.wait(workflow_id, run_id))[name]


async def _assert_log_ends_with_the_cancel(
    platform: Platform, workflow_id: str, run_id: str, node_run: dict[str, Any], end: str
) -> None:
    """The node run's events, as the stream shows them: `node_cancelled` is its last, after
    its `node_started` when its start reached the store first; the run's end is the last of
    all (docs/lineage-events-schedules.md)."""
    stream = [
        m.json()
        for m in await read_all(
            platform.api, f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events"
        )
        if m.data
    ]
    assert stream[-1]["type"] == end, stream
    kinds = [e["type"] for e in stream if e.get("nodeRunId") == node_run["id"]]
    assert kinds in (["node_cancelled"], ["node_started", "node_cancelled"]), stream
    # Nothing was logged after the run's end (a stream would never show it).
    logged = await platform.store.list_events(run_id, 0, 500)
    assert [e["id"] for e in logged] == [e["id"] for e in stream], logged
