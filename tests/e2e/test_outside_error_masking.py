"""A step's failure text written by the outside world (an MCP tool's error result, an A2A
agent's failed task, an HTTP error body) is masked as the logs mask it before the step's
error keeps it: the caller's service token a peer echoes (`Bearer eyJ…`) shows as `***` in
the node run's `error` (the run as the API shows it, its events) and in Temporal's history
(the failed activity's message); a catalog credential quoted with no credential word
before it is masked too; an error holding no secret is kept byte for byte."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.builders import pool_step, step
from tests.events.sse import read_all
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.catalog import Peers
from tests.support.identity import SECRET, as_user
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.platform import Platform, running_platform
from tests.support.server import free_port, serving
from tests.support.service_tokens import SIGNER

ENVIRON = {"HTTP_KEY": "http-s3cret-key", "AGENT_KEY": "agent-s3cret-key"}
AGENTS = [
    AgentSpec("auth-leaking-agent", kind="leak", leaks="authorization"),
    AgentSpec("key-leaking-agent", kind="leak"),  # quotes its X-Api-Key
    AgentSpec("failing-agent", kind="fail"),
    AgentSpec("slow-agent", kind="slow"),
]


@pytest.fixture
async def alice(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peers: Peers
) -> AsyncIterator[Platform]:
    """The platform in `jwt` mode, its client calling as Alice: every MCP and A2A request
    of her runs carries her service token (`Authorization: Bearer eyJ…`). Its catalog
    names the test MCP server and agents that quote what they were sent."""
    port = free_port()
    app = agents_app(AGENTS, f"http://127.0.0.1:{port}", AgentStats())
    async with serving(app, port=port) as agents:
        path = tmp_path / "executors.yaml"
        entries = "".join(
            f"  - name: {a.name}\n"
            f"    url: {agents}/agents/{a.name}/\n"
            "    headers: {X-Api-Key: '${AGENT_KEY}'}\n"
            for a in AGENTS
        )
        path.write_text(
            "mcpServers:\n"
            "  - id: leaky\n"
            f"    url: {peers.mcp_url}\n"
            "    tools: [quote_secret, broken]\n"
            "    headers: {X-Api-Key: '${HTTP_KEY}'}\n"
            f"a2aAgents:\n{entries}",
            encoding="utf-8",
        )
        catalog = load_catalog(path, refresh_seconds=3600, environ=ENVIRON)
        await catalog.start()
        registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED, service_tokens=SIGNER)
        try:
            async with running_platform(
                temporal_env.client,
                tmp_path,
                registry,
                settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
                headers=as_user("alice", name="Alice"),
            ) as platform:
                yield platform
        finally:
            await registry.close()
            await catalog.close()


@dataclass
class Failed:
    error: str  # the node run's, as the run's API shows it
    kept: str  # the run and its events as the API shows them, as JSON
    history: list[str]  # the failed activity's message in Temporal's history
    history_text: str  # the whole history, as text


async def failed_step(p: Platform, key: str, config: dict[str, Any]) -> Failed:
    """A run of one step calling `key`, failed on its only attempt."""
    return await failed_run(p, step("Call", key, config, stepConfig={"maxRetries": 0}))


async def failed_run(p: Platform, node: dict[str, Any]) -> Failed:
    """A run of the one step `node` (named `Call`), failed."""
    wf = await p.create({"nodes": [node]})
    run_id = await p.trigger(wf)
    run = await p.wait(wf, run_id)
    assert run["status"] == "failed", run
    (node_run,) = run["nodeRuns"]
    assert run["errorSummary"] == f"Node 'Call' failed: {node_run['error']}", run
    events = await read_all(p.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
    history = await p.client.get_workflow_handle(run_id).fetch_history()
    messages = [
        e.activity_task_failed_event_attributes.failure.message
        for e in history.events
        if e.HasField("activity_task_failed_event_attributes")
    ]
    kept = json.dumps(run) + json.dumps([m.data for m in events])
    return Failed(node_run["error"], kept, messages, str(history.events))


def assert_nowhere(failed: Failed, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in failed.kept, failed.kept
        assert secret not in failed.history_text


async def test_an_mcp_tool_quoting_the_bearer_token_it_was_sent_shows_it_masked(
    alice: Platform,
) -> None:
    failed = await failed_step(alice, "leaky/quote_secret", {"header": "authorization"})
    # The SDK's `Error executing tool quote_secret: …` names a tool, not a value: its
    # first word is kept.
    said = (
        "MCP tool 'quote_secret' reported an error: "
        "Error executing tool quote_secret: upstream refused token Bearer ***"
    )
    assert failed.error == said
    assert failed.history == [said]
    assert_nowhere(failed, "eyJ")


async def test_an_agent_failing_with_the_bearer_token_it_was_sent_shows_it_masked(
    alice: Platform,
) -> None:
    failed = await failed_step(alice, "auth-leaking-agent", {"task": "go"})
    said = "A2A agent 'auth-leaking-agent' failed: upstream refused key Bearer ***"
    assert failed.error == said
    assert failed.history == [said]
    assert_nowhere(failed, "eyJ")


async def test_a_catalog_credential_quoted_after_no_credential_word_is_masked(
    alice: Platform,
) -> None:
    # `key` alone names no credential for the logs' masks: the catalog's value is masked
    # because the catalog gave it.
    failed = await failed_step(alice, "key-leaking-agent", {"task": "go"})
    said = "A2A agent 'key-leaking-agent' failed: upstream refused key ***"
    assert failed.error == said
    assert failed.history == [said]
    assert_nowhere(failed, ENVIRON["AGENT_KEY"])


async def test_an_http_error_body_quoting_the_authorization_sent_shows_it_masked(
    alice: Platform,
) -> None:
    url = f"{alice.peer_url}/refuses-auth"
    headers = {"Authorization": "Bearer sk-live-abc123"}
    config = {"url": url, "method": "POST", "headers": headers}
    failed = await failed_step(alice, "builtin:http", config)
    said = f'POST {url} returned 401: {{"error": "Authorization: Bearer *** rejected"}}'
    assert failed.error == said
    assert failed.history == [said]
    # The step's config as written stays in its definition and input snapshot.
    assert "sk-live-abc123" not in failed.history[0]


async def test_a_pool_member_s_masked_failure_is_what_the_timeout_error_repeats(
    alice: Platform,
) -> None:
    # The next member's heartbeats name what failed before it; the workflow's timeout
    # error repeats them, as Temporal's history keeps them (the timed-out attempt's).
    config = {"task": "go", "seconds": 30}
    node = pool_step(
        "Call",
        ["auth-leaking-agent", "slow-agent"],
        config,
        stepConfig={"maxRetries": 0, "timeoutSeconds": 3},
    )
    failed = await failed_run(alice, node)
    assert failed.error == (
        "step timed out (start-to-close, timeoutSeconds 3) waiting for A2A agent slow-agent"
        " (after: auth-leaking-agent failed: A2A agent 'auth-leaking-agent' failed:"
        " upstream refused key Bearer ***)"
    )
    assert_nowhere(failed, "eyJ")


@pytest.mark.parametrize(
    ("key", "config", "said"),
    [
        (
            "failing-agent",
            {"task": "go"},
            "A2A agent 'failing-agent' failed: failing-agent could not do it: simulated failure",
        ),
        (
            "leaky/broken",
            {},
            "MCP tool 'broken' reported an error: Error executing tool broken: broken tool always"
            " fails",
        ),
    ],
)
async def test_an_error_holding_no_secret_is_kept_as_said(
    alice: Platform, key: str, config: dict[str, Any], said: str
) -> None:
    failed = await failed_step(alice, key, config)
    assert failed.error == said
    assert failed.history == [said]
