"""Catalog credentials go where the catalog says: a password written into a server's or an
agent's URL goes as HTTP Basic auth, never into a log."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.mcp_server import HANDSHAKE_METHODS, McpStats, build_mcp_server
from tests.peers.recording import RequestLog
from tests.peers.serving import ServedApp, free_port
from tests.support.service_tokens import SIGNER

# `s3cr%40t` in the URL: the password is `s3cr@t`, percent-decoded as a browser would.
BASIC = "Basic " + base64.b64encode(b"bob:s3cr@t").decode()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "executors.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@asynccontextmanager
async def registry_of(
    tmp_path: Path, catalog_text: str, **environ: str
) -> AsyncIterator[ExecutorRegistry]:
    catalog = load_catalog(write(tmp_path, catalog_text), refresh_seconds=3600, environ=environ)
    registry = ExecutorRegistry(catalog, service_tokens=SIGNER)
    try:
        yield registry
    finally:
        await registry.close()
        await catalog.close()


class TestAPasswordInAUrl:
    async def test_goes_to_an_mcp_server_as_basic_auth_on_every_request(
        self, tmp_path: Path, make_call: MakeCall
    ) -> None:
        seen = RequestLog(build_mcp_server(McpStats()).streamable_http_app())
        served = ServedApp(seen).start()
        url = f"http://bob:s3cr%40t@127.0.0.1:{served.port}/mcp"
        catalog = f"mcpServers:\n  - {{id: basic, url: '{url}'}}\n"
        try:
            async with registry_of(tmp_path, catalog) as registry:
                outcome = await registry.execute(make_call("basic/add", {"a": 1, "b": 2}))
        finally:
            served.stop()
        assert outcome.output == {"total": 3}
        methods = {r.rpc_method for r in seen.seen()}
        assert {"tools/list", "tools/call"} <= methods and methods & set(HANDSHAKE_METHODS)
        assert [r.headers.get("authorization") for r in seen.seen()] == [BASIC] * len(seen.seen())

    async def test_goes_to_an_agent_as_basic_auth_on_its_card_and_messages(
        self, tmp_path: Path, make_call: MakeCall
    ) -> None:
        port = free_port()
        seen = RequestLog(
            agents_app([AgentSpec("basic-agent")], f"http://127.0.0.1:{port}", AgentStats())
        )
        served = ServedApp(seen, port=port).start()
        url = f"http://bob:s3cr%40t@127.0.0.1:{port}/agents/basic-agent/"
        try:
            async with registry_of(
                tmp_path, f"a2aAgents:\n  - {{name: basic-agent, url: '{url}'}}\n"
            ) as registry:
                outcome = await registry.execute(make_call("basic-agent", {"task": "Hi"}))
        finally:
            served.stop()
        assert outcome.output["text"] == "Hi"
        requests = seen.seen()
        assert requests[0].path.endswith("/.well-known/agent-card.json")
        assert any(r.rpc_method for r in requests)
        assert [r.headers.get("authorization") for r in requests] == [BASIC] * len(requests)

    async def test_never_reaches_a_log_record(
        self, tmp_path: Path, make_call: MakeCall, caplog: pytest.LogCaptureFixture
    ) -> None:
        # Every record as logged, before any formatter masks it: the clients are never
        # given the password, so no library line (a debug line quoting the URL) holds it.
        seen = RequestLog(build_mcp_server(McpStats()).streamable_http_app())
        served = ServedApp(seen).start()
        url = f"http://bob:s3cr%40t@127.0.0.1:{served.port}/mcp"
        try:
            with caplog.at_level(logging.DEBUG):
                async with registry_of(
                    tmp_path, f"mcpServers:\n  - {{id: basic, url: '{url}'}}\n"
                ) as registry:
                    await registry.catalog.refresh()
                    await registry.execute(make_call("basic/add", {"a": 1, "b": 2}))
        finally:
            served.stop()
        assert caplog.records
        leaks = [r.getMessage() for r in caplog.records if "s3cr" in r.getMessage()]
        assert not leaks, leaks
