"""Saving a definition checks its executors against the live catalog: 400 naming the node
by its path and name."""

from __future__ import annotations

from typing import Any

import httpx

from tests.builders import pool_step, step
from tests.support.platform import Platform

WORKFLOWS = "/api/v1/workflows"


def rejected(response: httpx.Response) -> str:
    """The message of a 400 invalid_request."""
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "invalid_request"
    message: str = error["message"]
    return message


async def test_an_unknown_executor_key_is_refused_naming_the_node(platform: Platform) -> None:
    node = step("Mystery", "no-such-tool", id="node-mystery")

    message = rejected(await platform.api.post(WORKFLOWS, json={"name": "x", "nodes": [node]}))

    assert "nodes[0] ('Mystery'): unknown executorKey" in message
    assert "'no-such-tool' is not a built-in, an MCP tool or an A2A agent" in message


async def test_a_pool_with_an_unknown_agent_is_refused(platform: Platform) -> None:
    node = pool_step("Create", ["account-manager-v1", "ghost-agent"], id="node-pool")

    message = rejected(await platform.api.post(WORKFLOWS, json={"name": "x", "nodes": [node]}))

    assert "nodes[0] ('Create'): unresolvable" in message
    assert "unresolvable a2aPool agent(s) 'ghost-agent'" in message


async def test_a_tool_name_two_servers_offer_must_name_its_server(platform: Platform) -> None:
    node = step("Echo", "echo", {"text": "hi"}, id="node-echo")

    message = rejected(await platform.api.post(WORKFLOWS, json={"name": "x", "nodes": [node]}))

    assert "nodes[0] ('Echo'): unknown executorKey" in message
    assert "'echo' is ambiguous; write one of: peer-http/echo, peer-stdio/echo" in message


async def test_an_update_naming_an_unknown_tool_is_refused_and_keeps_the_old_nodes(
    platform: Platform,
) -> None:
    workflow_id = await platform.create({"nodes": [step("Echo", "peer-http/echo")]})

    response = await platform.api.put(
        f"{WORKFLOWS}/{workflow_id}", json={"nodes": [step("Echo", "peer-http/nothing")]}
    )

    assert "MCP server 'peer-http' offers no tool 'nothing'" in rejected(response)
    stored = (await platform.api.get(f"{WORKFLOWS}/{workflow_id}")).json()
    assert stored["nodes"][0]["executorKey"] == "peer-http/echo"
