"""A catalog URL's query values are masked wherever Trellis shows or logs the URL: a token
in an MCP server's or an A2A agent's URL reaches no node-run error, no run summary, no
event, no API answer and no log line, also when the server refuses or cannot be reached."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.builders import step
from tests.events.sse import read_all
from tests.support.http_peer import HttpPeer
from tests.support.platform import Platform, executor_registry, running_platform
from tests.support.server import free_port, serving

SECRET = "s3cret-catalog-token"
# `token` is a name the log formatter masks anyway; `sig` is one it does not know.
QUERY = f"token={SECRET}&sig={SECRET}"
# Each catalog entry, by the step key naming it: down (nothing listens) or answering 500.
KEYS = ("down/add", "failing/add", "down-agent", "failing-agent")


@pytest.fixture
async def platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path, log_lines: io.StringIO
) -> AsyncIterator[Platform]:
    port = free_port()
    async with serving(HttpPeer().app) as peer:
        path = tmp_path / "executors.yaml"
        path.write_text(
            "mcpServers:\n"
            f"  - {{id: down, url: 'http://127.0.0.1:{port}/mcp?{QUERY}', tools: [add]}}\n"
            f"  - {{id: failing, url: '{peer}/status/500?{QUERY}', tools: [add]}}\n"
            "a2aAgents:\n"
            f"  - {{name: down-agent, url: 'http://127.0.0.1:{port}/?{QUERY}'}}\n"
            f"  - {{name: failing-agent, url: '{peer}/status/500?{QUERY}'}}\n",
            encoding="utf-8",
        )
        async with (
            executor_registry(path) as registry,
            running_platform(temporal_env.client, tmp_path, registry) as platform,
        ):
            yield platform


async def _failed_run(platform: Platform, key: str) -> str:
    """The run of one step calling `key`, failed, with its events: as the API shows them."""
    step_node = step("Call", key, {"a": 1, "b": 2}, stepConfig={"maxRetries": 0})
    wf = await platform.create({"nodes": [step_node]})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "failed", run
    assert run["nodeRuns"][0]["error"] and run["errorSummary"], run
    events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
    return json.dumps(run) + json.dumps([m.data for m in events])


async def test_a_token_in_a_catalog_url_reaches_no_run_answer_or_log_line(
    platform: Platform, log_lines: io.StringIO
) -> None:
    shown = await asyncio.gather(*(_failed_run(platform, key) for key in KEYS))
    servers = (await platform.api.get("/api/v1/servers?refresh=true")).text
    agents = (await platform.api.get("/api/v1/agents?refresh=true")).text

    for key, text in zip(KEYS, shown, strict=True):
        assert SECRET not in text, (key, text)
    for answer in (servers, agents):
        assert SECRET not in answer, answer
        assert "token=***&sig=***" in answer  # the names still say what was sent
    assert "127.0.0.1" in agents  # and the errors where it went
    # The peer answering 500 serves in this process too: its access lines are not Trellis's
    # (the MCP calls to `/status/500?…`, the card's to `/status/500/.well-known/…?…`).
    peer_side = ("uvicorn.access", "/status/500")
    lines = log_lines.getvalue().splitlines()
    logged = "\n".join(line for line in lines if not all(s in line for s in peer_side))
    assert "Call" in logged  # the worker did log about the steps
    assert SECRET not in logged, [line for line in logged.splitlines() if SECRET in line]
