"""Catalog credentials go where the catalog says, and nowhere else: an agent's headers and
the caller's service token reach only the origin its catalog URL names (not one its card
names), and a password written into a URL goes as HTTP Basic auth, never into a log."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from activities.executors.base import TransientError
from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from temporal_workflows.contracts import Identity
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.mcp_server import HANDSHAKE_METHODS, McpStats, build_mcp_server
from tests.peers.recording import RequestLog
from tests.peers.serving import ServedApp, free_port
from tests.support.service_tokens import SIGNER, verified

ALICE = Identity(user_id="alice", scopes=["workflows-control"])
SECRET = "agent-s3cret-9d1f"
# `s3cr%40t` in the URL: the password is `s3cr@t`, percent-decoded as a browser would.
BASIC = "Basic " + base64.b64encode(b"bob:s3cr@t").decode()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "executors.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class TwoOrigins:
    """`redir-agent`'s card served at `first`, naming `second`, where the agent answers."""

    first: str
    second: str
    first_seen: RequestLog
    second_seen: RequestLog


@pytest.fixture(params=[True, False], ids=["streaming", "polled"])
def two_origins(request: pytest.FixtureRequest) -> Iterator[TwoOrigins]:
    spec = AgentSpec("redir-agent", streaming=request.param)
    second_port = free_port()
    second = f"http://127.0.0.1:{second_port}"
    # Both serve the agent under the card naming the second (another port: another origin).
    first_seen = RequestLog(agents_app([spec], second, AgentStats()))
    second_seen = RequestLog(agents_app([spec], second, AgentStats()))
    first_app = ServedApp(first_seen).start()
    second_app = ServedApp(second_seen, port=second_port).start()
    try:
        yield TwoOrigins(first_app.base_url, second, first_seen, second_seen)
    finally:
        first_app.stop()
        second_app.stop()


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


def redir_catalog(origins: TwoOrigins) -> str:
    return (
        "a2aAgents:\n"
        "  - name: redir-agent\n"
        f"    url: {origins.first}/agents/redir-agent/\n"
        '    headers: {X-Agent-Key: "${A2A_SECRET}"}\n'
    )


class TestAnAgentCardNamingAnotherOrigin:
    async def test_gets_neither_the_catalog_headers_nor_the_service_token_there(
        self, tmp_path: Path, make_call: MakeCall, two_origins: TwoOrigins
    ) -> None:
        async with registry_of(tmp_path, redir_catalog(two_origins), A2A_SECRET=SECRET) as registry:
            call = make_call("redir-agent", {"task": "Go elsewhere"}, triggered_by=ALICE)
            outcome = await registry.execute(call)
        assert outcome.output["agent"] == "redir-agent"
        assert outcome.output["text"] == "Go elsewhere"
        # The catalog's origin: its card, with the catalog's header and the caller's token.
        [card] = two_origins.first_seen.seen()
        assert card.path.endswith("/.well-known/agent-card.json")
        assert card.headers.get("x-agent-key") == SECRET
        assert verified(card.headers.get("authorization"))["sub"] == "alice"
        # The origin the card names: the messages (and polls), with neither.
        rpcs = [r for r in two_origins.second_seen.seen() if r.rpc_method]
        assert rpcs
        for request in two_origins.second_seen.seen():
            assert "x-agent-key" not in request.headers
            assert "authorization" not in request.headers

    async def test_one_warning_names_both_origins(
        self,
        tmp_path: Path,
        make_call: MakeCall,
        two_origins: TwoOrigins,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        async with registry_of(tmp_path, redir_catalog(two_origins), A2A_SECRET=SECRET) as registry:
            with caplog.at_level(logging.WARNING, logger="activities.executors"):
                for _ in range(2):
                    await registry.execute(make_call("redir-agent", {}, triggered_by=ALICE))
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        said = warnings[0].getMessage()
        assert "'redir-agent'" in said
        assert two_origins.first in said and two_origins.second in said
        assert SECRET not in said


async def test_an_agent_redirecting_elsewhere_is_not_followed(
    tmp_path: Path, make_call: MakeCall
) -> None:
    # Its card names its own origin, but it answers each message with a redirect to
    # another: a client following it would carry the catalog's header along.
    spec = AgentSpec("redir-agent")
    first_port, second_port = free_port(), free_port()
    first, second = f"http://127.0.0.1:{first_port}", f"http://127.0.0.1:{second_port}"
    agent = agents_app([spec], first, AgentStats())

    async def redirecting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = [(b"location", f"{second}{scope['path']}".encode())]
            await send({"type": "http.response.start", "status": 307, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await agent(scope, receive, send)

    second_seen = RequestLog(agents_app([spec], second, AgentStats()))
    first_app = ServedApp(redirecting, port=first_port).start()
    second_app = ServedApp(second_seen, port=second_port).start()
    catalog = (
        "a2aAgents:\n"
        f"  - {{name: redir-agent, url: '{first}/agents/redir-agent/',"
        ' headers: {X-Agent-Key: "${A2A_SECRET}"}}\n'
    )
    try:
        async with registry_of(tmp_path, catalog, A2A_SECRET=SECRET) as registry:
            with pytest.raises(TransientError, match="307"):
                await registry.execute(make_call("redir-agent", {}, triggered_by=ALICE))
    finally:
        first_app.stop()
        second_app.stop()
    assert second_seen.seen() == []


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
        requests = seen.seen()
        methods = {r.rpc_method for r in requests}
        assert {"tools/list", "tools/call"} <= methods and methods & set(HANDSHAKE_METHODS)
        assert [r.headers.get("authorization") for r in requests] == [BASIC] * len(requests)

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
