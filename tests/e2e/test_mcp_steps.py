"""MCP tool steps through the API: outputs, retries, tool errors, argument checks, stdio."""

from __future__ import annotations

import uuid

from tests.builders import retries, step
from tests.e2e.helpers import node_runs
from tests.peers.catalog import Peers
from tests.support.platform import Platform


async def test_structured_content_becomes_the_output_object(platform: Platform) -> None:
    run = await platform.run(
        {"nodes": [step("Add", "peer-http/add", {"a": "{{ a }}", "b": 3})]}, {"a": 2}
    )

    assert run["status"] == "completed", run
    added = node_runs(run)["Add"]
    assert added["outputSnapshot"] == {"total": 5}
    assert added["resolvedExecutor"] == {
        "kind": "mcp",
        "key": "peer-http/add",
        "server": "peer-http",
        "tool": "add",
    }
    assert run["finalOutput"] == {"total": 5}


async def test_a_flaky_tool_completes_on_a_later_attempt(platform: Platform) -> None:
    key = f"flaky-{uuid.uuid4().hex}"
    run = await platform.run(
        {
            "nodes": [
                step("Flaky", "flaky", {"key": key, "failures": 1}, stepConfig=retries(3)),
            ]
        }
    )

    assert run["status"] == "completed", run
    flaky = node_runs(run)["Flaky"]
    assert flaky["attempt"] == 2
    assert flaky["outputSnapshot"] == {"key": key, "attempts": 2}


async def test_a_tool_reporting_an_error_is_retried_then_fails_with_its_message(
    platform: Platform,
) -> None:
    run = await platform.run({"nodes": [step("Broken", "broken", stepConfig=retries(1))]})

    assert run["status"] == "failed", run
    broken = node_runs(run)["Broken"]
    assert broken["status"] == "failed"
    assert broken["attempt"] == 2
    assert "broken tool always fails" in broken["error"]
    assert "broken tool always fails" in run["errorSummary"]
    assert run["errorSummary"].startswith("Node 'Broken' failed:")


async def test_a_failed_tool_call_names_the_tool_it_went_to(platform: Platform) -> None:
    # A failed node run's resolvedExecutor was always null.
    run = await platform.run({"nodes": [step("Broken", "broken", stepConfig=retries(0))]})

    assert run["status"] == "failed", run
    chosen = node_runs(run)["Broken"]["resolvedExecutor"]
    assert chosen is not None and chosen["kind"] == "mcp", chosen
    assert (chosen["key"], chosen["tool"]) == ("broken", "broken")


async def test_a_tool_holding_the_last_attempt_past_its_timeout_is_named(
    platform: Platform,
) -> None:
    # The run and the node run said only "step timed out (start-to-close)", and the node
    # run named no executor: the attempt's own error came after the workflow's.
    nap = step("Nap", "peer-http/sleepy", {"seconds": 30})
    run = await platform.run({"nodes": [nap | {"stepConfig": {"timeoutSeconds": 2}}]})

    assert run["status"] == "failed", run
    said = "step timed out (start-to-close, timeoutSeconds 2) waiting for MCP tool peer-http/sleepy"
    assert run["errorSummary"] == f"Node 'Nap' failed: {said}", run
    napped = node_runs(run)["Nap"]
    assert napped["error"] == said
    assert napped["resolvedExecutor"] == {
        "kind": "mcp",
        "key": "peer-http/sleepy",
        "server": "peer-http",
        "tool": "sleepy",
    }


async def test_arguments_not_matching_the_schema_fail_at_once_naming_the_fields(
    platform: Platform,
) -> None:
    run = await platform.run(
        {"nodes": [step("Add", "peer-http/add", {"a": "two"}, stepConfig=retries(3))]}
    )

    assert run["status"] == "failed", run
    added = node_runs(run)["Add"]
    assert added["attempt"] == 1
    assert "a: 'two' is not of type 'integer'" in added["error"]
    assert "b: required" in added["error"]
    assert "do not match its input schema" in run["errorSummary"]


async def test_a_stdio_server_tool_runs_when_named_with_its_server(platform: Platform) -> None:
    run = await platform.run(
        {"nodes": [step("Echo", "peer-stdio/echo", {"text": "Hello {{ customerName }}"})]},
        {"customerName": "Ada"},
    )

    assert run["status"] == "completed", run
    echoed = node_runs(run)["Echo"]
    # A plain `str` return is wrapped by the server as structured content `{"result": …}`.
    assert echoed["outputSnapshot"] == {"result": "Hello Ada"}
    assert echoed["resolvedExecutor"] == {
        "kind": "mcp",
        "key": "peer-stdio/echo",
        "server": "peer-stdio",
        "tool": "echo",
    }


async def test_one_steps_output_feeds_the_next_tools_arguments(platform: Platform) -> None:
    run = await platform.run(
        {
            "nodes": [
                step("First", "peer-http/add", {"a": 1, "b": 2}),
                step(
                    "Second", "peer-http/add", {"a": "{{ previous_step_content.total }}", "b": 10}
                ),
            ]
        }
    )

    assert run["status"] == "completed", run
    assert node_runs(run)["Second"]["outputSnapshot"] == {"total": 13}


async def test_steps_reuse_the_workers_session_without_a_handshake_each(
    platform: Platform, peers: Peers
) -> None:
    await platform.run({"nodes": [step("Warm", "peer-http/echo", {"text": "warm"})]})
    handshakes, calls = peers.mcp_stats.handshakes, peers.mcp_stats.methods["tools/call"]

    run = await platform.run(
        {"nodes": [step(f"Echo {i}", "peer-http/echo", {"text": str(i)}) for i in range(5)]}
    )

    assert run["status"] == "completed", run
    assert peers.mcp_stats.methods["tools/call"] == calls + 5
    assert peers.mcp_stats.handshakes == handshakes
