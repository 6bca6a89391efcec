"""A credential the catalog gives a server or an agent, quoted back by that peer in its own
error (`upstream refused token …`), reaches no node-run error, no run summary, no event
and no worker log line: it shows as `***`. A tool's successful output is left as it is."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.builders import step
from tests.events.sse import read_all
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.catalog import Peers
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.platform import Platform, running_platform
from tests.support.server import free_port, serving

ENVIRON = {
    "MCP_KEY": "stdio-s3cret-token",
    "HTTP_KEY": "http-s3cret-key",
    "AGENT_KEY": "agent-s3cret-key",
}
SECRETS = tuple(ENVIRON.values())
# Each step, by its executor key and config: each peer quotes the credential it was given.
STEPS = {
    "stdio-leaky/quote_secret": {"env": "STDIO_TOKEN"},  # the stdio server's env
    "http-leaky/quote_secret": {"header": "x-api-key"},  # the HTTP server's header
    "leaking-agent": {"task": "go"},  # a failed task's message quoting its header
    "rpc-leaking-agent": {"task": "go"},  # a JSON-RPC error quoting its header
}


def _rpc_error_quoting_the_key(scope: Scope) -> bytes:
    headers = dict(scope["headers"])
    key = headers.get(b"x-api-key", b"").decode()
    error = {"code": -32001, "message": f"key {key} is not valid here"}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "error": error}).encode()


def _refusing_messages(app: Any) -> Any:
    """The agents' app, but every message is answered with a JSON-RPC error quoting the
    request's `X-Api-Key` (the card is served as it is)."""

    async def refusing(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": _rpc_error_quoting_the_key(scope)})
            return
        await app(scope, receive, send)

    return refusing


@pytest.fixture
async def platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peers: Peers, log_lines: io.StringIO
) -> AsyncIterator[Platform]:
    # An agents app is built for its base URL (its card names it): its port is chosen first.
    spec, ports = AgentSpec("leaking-agent", kind="leak"), (free_port(), free_port())
    apps = [agents_app([spec], f"http://127.0.0.1:{port}", AgentStats()) for port in ports]
    async with (
        serving(apps[0], port=ports[0]) as leaking,
        serving(_refusing_messages(apps[1]), port=ports[1]) as rpc_leaking,
    ):
        path = tmp_path / "executors.yaml"
        path.write_text(
            "mcpServers:\n"
            "  - id: stdio-leaky\n"
            f"    command: [{sys.executable}, -m, tests.peers.mcp_server, --stdio]\n"
            "    tools: [quote_secret]\n"
            "    env: {STDIO_TOKEN: '${MCP_KEY}'}\n"
            "  - id: http-leaky\n"
            f"    url: {peers.mcp_url}\n"
            "    tools: [quote_secret]\n"
            "    headers: {X-Api-Key: '${HTTP_KEY}'}\n"
            "a2aAgents:\n"
            "  - name: leaking-agent\n"
            f"    url: {leaking}/agents/leaking-agent/\n"
            "    headers: {X-Api-Key: '${AGENT_KEY}'}\n"
            "  - name: rpc-leaking-agent\n"
            f"    url: {rpc_leaking}/agents/leaking-agent/\n"
            "    headers: {X-Api-Key: '${AGENT_KEY}'}\n",
            encoding="utf-8",
        )
        catalog = load_catalog(path, refresh_seconds=3600, environ=ENVIRON)
        await catalog.start()
        registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED)
        try:
            async with running_platform(temporal_env.client, tmp_path, registry) as platform:
                yield platform
        finally:
            await registry.close()
            await catalog.close()


async def _failed_run(platform: Platform, key: str, config: dict[str, Any]) -> str:
    """The run of one step calling `key`, failed, with its events: as the API shows them."""
    wf = await platform.create({"nodes": [step("Call", key, config, stepConfig={"maxRetries": 0})]})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "failed", run
    assert "***" in run["nodeRuns"][0]["error"] and "***" in run["errorSummary"], run
    events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
    return json.dumps(run) + json.dumps([m.data for m in events])


async def test_a_credential_a_peer_quotes_in_its_error_is_masked_everywhere(
    platform: Platform, log_lines: io.StringIO
) -> None:
    shown = await asyncio.gather(*(_failed_run(platform, k, c) for k, c in STEPS.items()))
    for key, text in zip(STEPS, shown, strict=True):
        assert all(secret not in text for secret in SECRETS), (key, text)
    # The peers serve in this process too: their own records (the MCP and A2A servers',
    # and the agent's SSE chunks) are not Trellis's; the worker's and the API's are checked.
    records = [r for r in _records(log_lines.getvalue()) if not r[0].startswith(PEER_LOGGERS)]
    assert any("refused token ***" in text for _, text in records)  # the worker logged them
    leaked = [text for _, text in records if any(secret in text for secret in SECRETS)]
    assert not leaked, leaked


# The loggers of the peers serving in this process (sse_starlette: the agent's stream).
PEER_LOGGERS = ("mcp.server", "a2a.server", "sse_starlette")
_RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\S+ +[A-Z]+ +([\w.]+): ", re.M)


def _records(logged: str) -> list[tuple[str, str]]:
    """Each log record's logger and text, its continuation lines (a traceback) included."""
    starts = list(_RECORD.finditer(logged))
    ends = [m.start() for m in starts[1:]] + [len(logged)]
    return [(m.group(1), logged[m.start() : end]) for m, end in zip(starts, ends, strict=True)]


async def test_a_stdio_servers_stray_stdout_line_is_one_masked_warning_naming_it(
    tmp_path: Path, log_lines: io.StringIO
) -> None:
    # The server prints its token on stdout before serving: the SDK logged an ERROR with
    # a pydantic traceback quoting the line (`input_value='connected upstream with
    # ...cret stdio-TOKEN-zzz999'`), naming no server, in the API's and the worker's logs.
    path = tmp_path / "executors.yaml"
    path.write_text(
        "mcpServers:\n"
        "  - id: chatty\n"
        f"    command: [{sys.executable}, -m, tests.peers.mcp_server, --stdio,"
        " --announce, GARBAGE_TOKEN]\n"
        "    env: {GARBAGE_TOKEN: '${AUDIT_STDIO_TOKEN}'}\n",
        encoding="utf-8",
    )
    catalog = load_catalog(path, refresh_seconds=3600, environ={"AUDIT_STDIO_TOKEN": TOKEN})
    try:
        await catalog.refresh()  # what the API and the worker do at start
        [server] = catalog.servers()
        assert server.status == "up" and "echo" in [t.name for t in server.tools]  # skipped
    finally:
        await catalog.close()
    logged = log_lines.getvalue()
    assert TOKEN not in logged
    stdio = [text for name, text in _records(logged) if name == "mcp.client.stdio"]
    assert stdio == [
        stdio[0].split(" WARNING ")[0] + " WARNING mcp.client.stdio: MCP server chatty wrote a"
        " line to stdout that is not JSON-RPC (skipped): connected upstream with secret ***\n"
    ]


TOKEN = "stdio-TOKEN-zzz999"
