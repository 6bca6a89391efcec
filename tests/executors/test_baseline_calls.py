"""The benchmark's hand-written activities send the tool and the agent what our executors
send (bench/handwritten.py): like with like, the peer does the same work for both."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from mcp import Client as McpClient
from temporalio.testing import ActivityEnvironment

from activities.executors.registry import ExecutorRegistry
from bench.handwritten import EchoInput, HandActivities
from temporal_workflows.scope import Scope
from temporal_workflows.step_runner import executor_context
from tests.executors.conftest import MakeCall
from tests.peers.catalog import PEER_API_KEY, Peers

AGENT = "account-manager-v1"
RUN_INPUT = {"customerName": "Ada"}
PREVIOUS = {"agent": "echo", "text": "step 0", "config": {"text": "step 0"}}
HEADERS = {"X-Api-Key": PEER_API_KEY}


@contextlib.asynccontextmanager
async def hand_activities(peers: Peers) -> AsyncIterator[HandActivities]:
    """The hand-written activities with their own clients, as bench/hand_worker.py makes
    them (opened and closed in the test's own task, as the MCP client requires)."""
    async with (
        McpClient(peers.mcp_url) as mcp,
        httpx.AsyncClient(headers=HEADERS, timeout=30.0) as http,
    ):
        card = await A2ACardResolver(http, peers.agent_url(AGENT)).get_agent_card()
        a2a = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        yield HandActivities(mcp, a2a)


def _environment(node_id: str) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="run-hand", activity_id=node_id)
    return env


def _our_context() -> dict[str, Any]:
    """What the interpreter hands a step after one earlier step (step_runner)."""
    scope = Scope(input=RUN_INPUT, additional_data={}, session_state={})
    scope.record("s0", PREVIOUS)
    return executor_context(scope.variables())


def _shape(value: Any) -> Any:
    """The keys of every object, nested; lists and scalars reduced to their kind."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


def _last_params(peers: Peers, method: str, path: str) -> dict[str, Any]:
    sent = peers.agent_requests if path.startswith("/agents") else peers.mcp_requests
    params = [r.rpc_params for r in sent.seen(method, path) if r.rpc_params is not None]
    assert params, f"no {method} request to {path}"
    return params[-1]


async def test_the_agent_gets_the_same_message_from_both(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    path = f"/agents/{AGENT}"
    await registry.execute(make_call(AGENT, {"text": "step 1"}, context=_our_context()))
    ours = _last_params(peers, "SendStreamingMessage", path)["message"]
    inp = EchoInput(text="step 1", input=RUN_INPUT, previous=PREVIOUS)
    async with hand_activities(peers) as hand:
        await _environment("1").run(hand.a2a_echo, inp)
    theirs = _last_params(peers, "SendStreamingMessage", path)["message"]

    assert ours["messageId"] != theirs["messageId"]  # two messages, one from each
    [our_part], [their_part] = ours["parts"], theirs["parts"]
    assert _shape(their_part) == _shape(our_part)
    assert their_part["data"]["context"] == our_part["data"]["context"]
    assert _shape(theirs["metadata"]) == _shape(ours["metadata"])
    # The same size give or take the ids' lengths.
    assert abs(len(json.dumps(theirs)) - len(json.dumps(ours))) < 0.1 * len(json.dumps(ours))


async def test_the_tool_gets_the_same_request_from_both(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    await registry.execute(make_call("peer-http/echo", {"text": "step 1"}))
    ours = _last_params(peers, "tools/call", "/mcp")
    async with hand_activities(peers) as hand:
        await _environment("1").run(hand.mcp_echo, EchoInput(text="step 1"))
    theirs = _last_params(peers, "tools/call", "/mcp")

    assert theirs["arguments"] == ours["arguments"] == {"text": "step 1"}
    # Our trace context joins `_meta` only when tracing is on; here it is off.
    assert _shape(theirs["_meta"]) == _shape(ours["_meta"])
