"""Live discovery: tools and cards at start, a down server reported and found again later."""

from __future__ import annotations

import socket

import pytest

from activities.executors import catalog as catalog_module
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile, McpServerSpec
from tests.peers.a2a_agents import AgentStats, agents_app
from tests.peers.catalog import AGENTS, Peers
from tests.peers.mcp_server import McpStats, build_mcp_server
from tests.peers.serving import ServedApp, free_port


async def test_discovery_lists_tools_with_input_schemas(catalog: Catalog) -> None:
    server = next(s for s in catalog.servers() if s.id == "peer-http")
    add = next(t for t in server.tools if t.name == "add")
    assert server.status == "up"
    assert add.input_schema is not None and add.input_schema["required"] == ["a", "b"]


async def test_static_tools_limit_a_server(catalog: Catalog) -> None:
    server = next(s for s in catalog.servers() if s.id == "peer-stdio")
    assert (server.status, server.tools_source) == ("up", "static")
    assert sorted(t.name for t in server.tools) == ["add", "echo", "environment"]


async def test_agent_cards_give_skills(catalog: Catalog) -> None:
    agent = catalog.agent("account-manager-v2")
    assert agent.status == "up" and agent.streaming is True
    assert agent.skills[0].tags == ["accounts", "premium", "sso"]


async def test_dead_agent_is_reported_down(catalog: Catalog) -> None:
    agent = catalog.agent("dead-agent")
    assert agent.status == "down" and agent.error


async def test_server_down_at_start_is_reported_then_found_after_refresh() -> None:
    port = free_port()
    catalog = Catalog(
        CatalogFile(servers=(McpServerSpec(id="late", url=f"http://127.0.0.1:{port}/mcp"),))
    )
    served = None
    try:
        await catalog.start()
        down = catalog.servers()[0]
        assert down.status == "down" and down.error and down.tools == []
        assert catalog.resolve("add") is None
        served = ServedApp(build_mcp_server(McpStats()).streamable_http_app(), port=port).start()
        await catalog.refresh()
        up = catalog.servers()[0]
        assert up.status == "up" and up.error is None
        assert catalog.resolve("add") is not None
    finally:
        await catalog.close()
        if served:
            served.stop()


async def test_an_agent_whose_url_carries_a_query_is_discovered(
    catalog: Catalog, peers: Peers
) -> None:
    # `…/agents/signed-agent?sig=…`: the card is asked for under the path, the query kept
    # (the SDK appended the card's path to the query, and the agent refused it).
    agent = catalog.agent("signed-agent")
    assert (agent.status, agent.error) == ("up", None)
    asked = peers.agent_requests.seen(path_prefix="/agents/signed-agent/.well-known/")
    assert [r.path for r in asked][:1] == ["/agents/signed-agent/.well-known/agent-card.json"]


async def test_a_peer_that_never_answers_is_reported_down_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It accepts connections and says nothing: the server read "TimeoutError", the agent
    # "…fetching agent card from http://…:" with nothing after the colon.
    monkeypatch.setattr(catalog_module, "DISCOVERY_TIMEOUT_SECONDS", 0.5)
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    catalog = Catalog(
        CatalogFile(
            servers=(McpServerSpec(id="mute", url=f"http://127.0.0.1:{port}/mcp"),),
            agents=(A2AAgentSpec(name="mute-agent", url=f"http://127.0.0.1:{port}/a"),),
        )
    )
    try:
        await catalog.start()
        (server,) = catalog.servers()
        assert (server.status, server.error) == (
            "down",
            "TimeoutError: no tool listing within 0.5 s",
        )
        agent = catalog.agent("mute-agent")
        assert agent.status == "down" and agent.error
        assert not agent.error.rstrip().endswith(":"), agent.error
        assert agent.error.endswith("ReadTimeout"), agent.error
    finally:
        await catalog.close()
        silent.close()


def _client_sockets_to(port: int) -> list[str]:
    """The TCP states (hex, /proc/net/tcp's) of this machine's connections to `port`."""
    states = []
    for line in open("/proc/net/tcp", encoding="ascii").readlines()[1:]:
        fields = line.split()
        if int(fields[2].rsplit(":", 1)[1], 16) == port:
            states.append(fields[3])
    return states


async def test_a_card_refresh_keeps_no_connection_open_until_the_next() -> None:
    # An agent closes an idle connection within seconds; a pooled one then sat half-closed
    # (CLOSE-WAIT) for the whole refresh interval, one per agent (found by a soak).
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = ServedApp(agents_app(AGENTS[:1], base, AgentStats()), port=port).start()
    catalog = Catalog(
        CatalogFile(
            agents=(A2AAgentSpec(name=AGENTS[0].name, url=f"{base}/agents/{AGENTS[0].name}/"),)
        )
    )
    try:
        await catalog.start()
        await catalog.refresh()
        assert catalog.agent(AGENTS[0].name).status == "up"
        established, close_wait = "01", "08"
        assert not {established, close_wait} & set(_client_sockets_to(port))
    finally:
        await catalog.close()
        served.stop()
