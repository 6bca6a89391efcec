"""`GET /servers` and `/agents` through the real app show the peers' live tools and cards."""

from __future__ import annotations

from typing import Any

from tests.peers.catalog import AGENTS
from tests.peers.mcp_server import ECHO_TOOLS
from tests.support.platform import Platform


async def get(platform: Platform, path: str) -> Any:
    response = await platform.api.get(f"/api/v1/{path}")
    assert response.status_code == 200, response.text
    return response.json()


async def test_servers_show_each_peers_tools_with_input_schemas(platform: Platform) -> None:
    servers = {s["id"]: s for s in await get(platform, "servers")}

    http = servers["peer-http"]
    assert (http["transport"], http["status"], http["toolsSource"]) == (
        "streamable-http",
        "up",
        "discovered",
    )
    tools = {t["name"]: t for t in http["tools"]}
    assert {"echo", "add", "flaky", "broken", "sleepy", *ECHO_TOOLS} <= set(tools)
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["inputSchema"]["properties"]["a"]["type"] == "integer"
    assert tools["add"]["description"] == "Add two integers; structured result."


async def test_a_stdio_server_lists_only_its_declared_tools(platform: Platform) -> None:
    servers = {s["id"]: s for s in await get(platform, "servers")}

    stdio = servers["peer-stdio"]
    assert (stdio["transport"], stdio["status"], stdio["toolsSource"]) == ("stdio", "up", "static")
    assert stdio["command"][-2:] == ["tests.peers.mcp_server", "--stdio"]
    assert sorted(t["name"] for t in stdio["tools"]) == ["add", "echo", "environment"]


async def test_agents_show_cards_skills_and_status(platform: Platform) -> None:
    agents = {a["name"]: a for a in await get(platform, "agents")}

    assert set(agents) == {a.name for a in AGENTS} | {"dead-agent"}
    v2 = agents["account-manager-v2"]
    assert v2["status"] == "up"
    assert v2["cardName"] == "account-manager-v2"
    assert v2["streaming"] is True
    assert v2["skills"] == [
        {
            "id": "premium-accounts",
            "name": "premium accounts",
            "description": "Creates premium accounts with SSO",
            "tags": ["accounts", "premium", "sso"],
            "examples": [],
        }
    ]
    assert agents["account-creator-v2"]["streaming"] is False


async def test_an_agent_that_does_not_answer_is_down_with_its_error(platform: Platform) -> None:
    agents = {a["name"]: a for a in await get(platform, "agents")}

    dead = agents["dead-agent"]
    assert dead["status"] == "down"
    assert dead["error"]
    assert dead["skills"] == []
