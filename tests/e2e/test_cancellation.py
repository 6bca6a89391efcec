"""Cancelling a run (from the Temporal client, as the Web UI does) reaches the running step."""

from __future__ import annotations

from typing import Any

from tests.builders import step
from tests.e2e.helpers import node_runs
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


async def test_a_tool_call_past_its_step_timeout_is_cancelled_on_its_server(
    platform: Platform, peers: Peers
) -> None:
    naps = peers.mcp_stats.naps
    cancelled = naps["cancelled"]
    nap = step("Nap", "sleepy", {"seconds": 30}, stepConfig={"timeoutSeconds": 1})

    run = await platform.run({"nodes": [nap]})

    assert run["status"] == "failed", run
    await eventually(lambda: naps["cancelled"] > cancelled, within=5)
