"""Downstream identity: the real MCP server and A2A agents see a valid, freshly minted
token for the run's triggering user on every request of a step, and none without one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from activities.executors.registry import ExecutorRegistry
from temporal_workflows.contracts import Identity
from tests.executors.conftest import MakeCall
from tests.peers.catalog import Peers
from tests.peers.recording import RequestLog
from tests.peers.serving import ServedApp
from tests.support.service_tokens import TTL_SECONDS, verified

ALICE = Identity(
    user_id="alice",
    username="Alice",
    scopes=["workflows-read", "tools"],
    roles=["ops"],
    authenticated_at=1_700_000_000,
)
BOB = Identity(user_id="bob", scopes=["workflows-control"])


class TestMcp:
    async def test_a_tool_call_carries_a_valid_token_with_the_callers_claims(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        call = make_call("peer-http/add", {"a": 1, "b": 2}, triggered_by=ALICE, attempt=2)
        before = time.time()
        await registry.execute(call)
        [request] = peers.mcp_requests.seen("tools/call")[-1:]
        claims = verified(request.headers.get("authorization"))
        assert claims["sub"] == "alice" and claims["name"] == "Alice"
        assert claims["scope"] == "workflows-read tools" and claims["roles"] == ["ops"]
        assert claims["auth_time"] == 1_700_000_000  # how old the identity is, for drift
        assert claims["exp"] - claims["iat"] == TTL_SECONDS
        assert before - 1 <= claims["iat"] <= time.time() + 1
        assert claims["trellis"] == {
            "runId": call.run_id,
            "workflowId": call.workflow_id,
            "nodeId": call.node_id,
            "nodeRunId": call.node_run_id,
            "attempt": 2,
        }

    async def test_every_call_gets_a_fresh_token(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        for _ in range(3):
            await registry.execute(make_call("peer-http/add", {"a": 1, "b": 2}, triggered_by=ALICE))
        tokens = [r.headers["authorization"] for r in peers.mcp_requests.seen("tools/call")[-3:]]
        assert len(set(tokens)) == 3
        assert len({verified(t)["jti"] for t in tokens}) == 3

    async def test_calls_of_different_callers_on_one_session_each_carry_their_own(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        for who in (ALICE, BOB, None, ALICE):
            await registry.execute(make_call("peer-http/add", {"a": 1, "b": 2}, triggered_by=who))
        seen = [r.headers.get("authorization") for r in peers.mcp_requests.seen("tools/call")[-4:]]
        assert [verified(h)["sub"] if h else None for h in seen] == ["alice", "bob", None, "alice"]

    async def test_a_call_without_a_triggering_identity_sends_none(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        await registry.execute(make_call("peer-http/add", {"a": 1, "b": 2}))
        [request] = peers.mcp_requests.seen("tools/call")[-1:]
        assert "authorization" not in request.headers
        assert request.headers["x-api-key"]  # the catalog's own header still goes

    async def test_the_shared_session_handshake_never_carries_a_callers_token(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        session = registry.catalog.sessions.get("peer-http")
        await session.reset()
        before = len(peers.mcp_requests.seen())
        # The call that (re)connects acts for Alice; the session it opens serves everyone.
        await registry.execute(make_call("peer-http/add", {"a": 1, "b": 2}, triggered_by=ALICE))
        await registry.execute(make_call("peer-http/add", {"a": 1, "b": 2}))
        requests = peers.mcp_requests.seen()[before:]
        handshakes = [r for r in requests if r.rpc_method in ("initialize", "server/discover")]
        assert handshakes
        assert all("authorization" not in r.headers for r in handshakes)
        calls = [r for r in requests if r.rpc_method == "tools/call"]
        assert [("authorization" in r.headers) for r in calls] == [True, False]


class TestA2A:
    async def test_a_message_carries_a_valid_token_for_the_caller(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        await registry.execute(make_call("account-manager-v1", {"message": "hi"}, triggered_by=BOB))
        rpcs = [
            r
            for r in peers.agent_requests.seen(path_prefix="/agents/account-manager-v1/")
            if r.rpc_method
        ]
        claims = verified(rpcs[-1].headers.get("authorization"))
        assert claims["sub"] == "bob" and claims["scope"] == "workflows-control"
        assert "name" not in claims and "auth_time" not in claims

    async def test_every_poll_of_a_long_task_gets_a_fresh_token(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        prefix = "/agents/account-creator-v2/"  # no streaming: the executor polls
        before = len(peers.agent_requests.seen(path_prefix=prefix))
        await registry.execute(
            make_call("account-creator-v2", {"message": "hi"}, triggered_by=ALICE)
        )
        rpcs = [r for r in peers.agent_requests.seen(path_prefix=prefix)[before:] if r.rpc_method]
        assert len(rpcs) >= 2
        claims = [verified(r.headers.get("authorization")) for r in rpcs]
        assert {c["sub"] for c in claims} == {"alice"}
        assert len({c["jti"] for c in claims}) == len(rpcs)

    async def test_a_pool_step_without_identity_sends_none(
        self, registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
    ) -> None:
        before = len(peers.agent_requests.seen())
        await registry.execute(make_call(None, {"message": "hi"}, a2a_pool=["web-agent"]))
        rpcs = [r for r in peers.agent_requests.seen()[before:] if r.rpc_method]
        assert rpcs and all("authorization" not in r.headers for r in rpcs)


@pytest.fixture(scope="module")
def http_peer() -> Iterator[tuple[str, RequestLog]]:
    async def hello(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    log = RequestLog(Starlette(routes=[Route("/hello", hello)]))
    served = ServedApp(log).start()
    yield served.base_url, log
    served.stop()


async def test_builtin_http_never_carries_the_token(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: tuple[str, RequestLog]
) -> None:
    url, log = http_peer
    await registry.execute(make_call("builtin:http", {"url": f"{url}/hello"}, triggered_by=ALICE))
    [request] = log.seen()
    assert "authorization" not in request.headers
