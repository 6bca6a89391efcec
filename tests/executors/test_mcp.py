"""MCP tool steps over streamable HTTP and stdio: results, every error class, session reuse."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from activities.executors.base import PermanentError, TransientError
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import CatalogFile, McpServerSpec, read_catalog_file
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.catalog import Peers
from tests.peers.mcp_server import McpStats, build_mcp_server
from tests.peers.serving import ServedApp, free_port
from tests.support.polling import eventually


async def test_structured_content_is_the_output(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("peer-http/add", {"a": 2, "b": 3}))
    assert outcome.output == {"total": 5}
    assert outcome.resolved_executor == {
        "kind": "mcp",
        "key": "peer-http/add",
        "server": "peer-http",
        "tool": "add",
    }


async def test_json_text_content_is_parsed(registry: ExecutorRegistry, make_call: MakeCall) -> None:
    config = {"template": "enterprise_welcome", "cc": ["sales@company.com"]}
    outcome = await registry.execute(make_call("mcp-email-sender", config))
    assert outcome.output == config


async def test_pool_strategy_is_not_sent_as_an_argument(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("tool-a", {"x": 1, "poolStrategy": "failover"}))
    assert outcome.output == {"x": 1}


async def test_stdio_server_answers(registry: ExecutorRegistry, make_call: MakeCall) -> None:
    outcome = await registry.execute(make_call("peer-stdio/add", {"a": 1, "b": 1}))
    assert outcome.output == {"total": 2}


async def test_arguments_not_matching_the_schema_are_permanent_and_named(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError) as info:
        await registry.execute(make_call("peer-http/add", {"a": "two"}))
    assert "a: 'two' is not of type 'integer'" in str(info.value)
    assert "b: required" in str(info.value)


async def test_is_error_result_is_retryable(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(TransientError, match="broken tool always fails"):
        await registry.execute(make_call("broken"))


async def test_flaky_tool_fails_n_times_then_succeeds(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    config = {"key": str(uuid.uuid4()), "failures": 2}
    for _ in range(2):
        with pytest.raises(TransientError, match="flaky failure"):
            await registry.execute(make_call("flaky", config))
    outcome = await registry.execute(make_call("flaky", config))
    assert outcome.output["attempts"] == 3


async def test_tool_the_server_no_longer_offers_is_permanent(
    peers: Peers, make_call: MakeCall
) -> None:
    spec = McpServerSpec(id="gone", url=peers.mcp_url, tools=("vanished",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        with pytest.raises(PermanentError, match="no longer offers tool 'vanished'"):
            await registry.execute(make_call("vanished"))
    finally:
        await registry.close()


async def test_tool_removed_after_the_listing_is_permanent(make_call: MakeCall) -> None:
    # The session listed the tool; the server then dropped it and answers "unknown tool"
    # (an error result): listed again, the tool is gone, so no retry can help.
    server = build_mcp_server()
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="shrinking", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        assert (await registry.execute(make_call("shrinking/add", {"a": 1, "b": 2}))).output
        server.remove_tool("add")
        with pytest.raises(PermanentError, match="no longer offers tool 'add'"):
            await registry.execute(make_call("shrinking/add", {"a": 1, "b": 2}))
        with pytest.raises(TransientError, match="broken tool always fails"):
            await registry.execute(make_call("shrinking/broken"))  # still offered: retryable
    finally:
        await registry.close()
        served.stop()


async def test_a_tool_publishing_an_invalid_input_schema_is_permanent(make_call: MakeCall) -> None:
    # No retry can help until the server lists another schema; the message says whose fault.
    server = build_mcp_server()
    server._tool_manager.get_tool("echo").parameters = {  # type: ignore[union-attr]
        "type": "object",
        "properties": {"text": {"type": "notatype"}},
    }
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="badschema", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        with pytest.raises(PermanentError, match="'echo' publishes an invalid input schema"):
            await registry.execute(make_call("badschema/echo", {"text": "x"}))
    finally:
        await registry.close()
        served.stop()


async def test_an_answer_outside_the_tools_own_output_schema_is_permanent(
    make_call: MakeCall,
) -> None:
    # The tool ran (its effects happened) and answered against its own schema: a retry
    # would run it again for the same answer. The session it came over stays open.
    stats = McpStats()
    server = build_mcp_server(stats)
    tool = server._tool_manager.get_tool("echo")
    assert tool is not None
    tool.output_schema = {
        "type": "object",
        "properties": {"total": {"type": "integer"}},
        "required": ["total"],
    }
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="badout", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        with pytest.raises(
            PermanentError, match=r"'echo' answered outside its own output schema"
        ) as refused:
            await registry.execute(make_call("badout/echo", {"text": "x" * 5000}))
        # The SDK's message quotes the whole answer: the step's error keeps its start.
        assert len(str(refused.value)) < 700
        assert registry.catalog.sessions.get("badout").connects == 1
    finally:
        await registry.close()
        served.stop()


async def test_unreachable_server_is_retryable(make_call: MakeCall) -> None:

    spec = McpServerSpec(id="down", url=f"http://127.0.0.1:{free_port()}/mcp", tools=("echo",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        with pytest.raises(TransientError, match="unreachable"):
            await registry.execute(make_call("echo", {"text": "x"}))
    finally:
        await registry.close()


@asynccontextmanager
async def served_registry(stats: McpStats, server_id: str) -> AsyncIterator[ExecutorRegistry]:
    """A registry whose catalog holds one test MCP server (counting into `stats`), listed
    (discovery shares the session with calls)."""
    served = ServedApp(build_mcp_server(stats).streamable_http_app()).start()
    spec = McpServerSpec(id=server_id, url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        yield registry
    finally:
        await registry.close()
        served.stop()


async def test_session_is_reused_across_calls(make_call: MakeCall) -> None:
    stats = McpStats()
    async with served_registry(stats, "counted") as registry:
        calls = [registry.execute(make_call("echo", {"text": str(i)})) for i in range(10)]
        await asyncio.gather(*calls)
        for i in range(10):
            await registry.execute(make_call("echo", {"text": str(i)}))
        assert stats.methods["tools/call"] == 20
        assert stats.handshakes == 1
        assert registry.catalog.sessions.get("counted").connects == 1


async def test_a_call_the_server_answers_with_an_error_leaves_the_calls_beside_it(
    make_call: MakeCall,
) -> None:
    # A JSON-RPC error is an answer: the connection works, and the steps sharing it
    # (a parallel block's children) go on; it is not dropped and reconnected.
    stats = McpStats()
    async with served_registry(stats, "shared") as registry:
        beside = asyncio.create_task(registry.execute(make_call("shared/sleepy", {"seconds": 0.5})))
        await eventually(lambda: stats.methods["tools/call"] >= 1, every=0.01)
        with pytest.raises(TransientError, match="refused by the server"):
            await registry.execute(make_call("shared/refuses", {}))
        assert (await beside).output == {"result": "awake"}
        assert registry.catalog.sessions.get("shared").connects == 1


async def test_a_cancelled_call_is_cancelled_on_the_server_and_leaves_its_session(
    make_call: MakeCall,
) -> None:
    # The SDK tells the server (`notifications/cancelled`, or at protocol 2026 the request's
    # stream closed) and the session it shares with other calls stays connected.
    stats = McpStats()
    async with served_registry(stats, "shared") as registry:
        beside = asyncio.create_task(registry.execute(make_call("shared/sleepy", {"seconds": 1})))
        hung = asyncio.create_task(registry.execute(make_call("shared/sleepy", {"seconds": 60})))
        await eventually(lambda: stats.naps["begun"] == 2, every=0.01)
        hung.cancel()
        await eventually(lambda: stats.naps["cancelled"] == 1, within=5)
        assert (await beside).output == {"result": "awake"}
        assert (await registry.execute(make_call("shared/echo", {"text": "x"}))).output == {
            "result": "x"
        }
        assert registry.catalog.sessions.get("shared").connects == 1


async def test_a_cancelled_call_leaves_a_stdio_session_serving_the_next(
    make_call: MakeCall,
) -> None:
    command = [sys.executable, "-m", "tests.peers.mcp_server", "--stdio"]
    spec = McpServerSpec(id="piped", command=command)
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        hung = asyncio.create_task(registry.execute(make_call("piped/sleepy", {"seconds": 60})))
        await asyncio.sleep(0.5)
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        async with asyncio.timeout(5):
            outcome = await registry.execute(make_call("piped/echo", {"text": "x"}))
        assert outcome.output == {"result": "x"}
        assert registry.catalog.sessions.get("piped").connects == 1
    finally:
        await registry.close()


def _refusing() -> ASGIApp:
    """An HTTP server that refuses every request as a wrong token is refused."""

    async def refuse(request: Request) -> PlainTextResponse:
        return PlainTextResponse("no", status_code=401)

    return Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])


@pytest.mark.parametrize(
    ("app", "path", "said"),
    [
        # A wrong or missing token: said as an A2A agent's 401 is.
        (
            _refusing,
            "/mcp",
            "HTTP 401 Unauthorized to initialize (check the catalog entry's headers",
        ),
        # A server at /mcp asked at another path: the SDK said only "MCPError: Not Found".
        (
            lambda: build_mcp_server(McpStats()).streamable_http_app(),
            "/wrong",
            "HandshakeRefused: HTTP 404 Not Found to initialize (check the url's path:"
            " streamable HTTP servers serve at /mcp by default)",
        ),
        # MCP's legacy SSE transport takes no POST at its stream's URL.
        (
            lambda: build_mcp_server(McpStats()).sse_app(),
            "/sse",
            "HTTP 405 Method Not Allowed to initialize (a legacy SSE server?",
        ),
    ],
)
async def test_a_handshake_refused_with_an_http_status_names_it(
    make_call: MakeCall, app: Callable[[], ASGIApp], path: str, said: str
) -> None:
    # The SDK says only "Server returned an error response" for the handshake.
    served = ServedApp(app()).start()
    spec = McpServerSpec(id="refusing", url=f"{served.base_url}{path}", tools=("echo",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        [server] = registry.catalog.servers()
        assert server.status == "down" and server.error is not None
        assert said in server.error
        with pytest.raises(TransientError, match=re.escape(said)):
            await registry.execute(make_call("refusing/echo", {"text": "x"}))
    finally:
        await registry.close()
        served.stop()


async def test_a_stdio_server_that_exited_while_idle_is_started_again_for_the_next_call(
    make_call: MakeCall,
) -> None:
    # Its session looked open until a call failed on it ("Connection closed"): with no
    # retries left, the run failed though nothing was wrong but an idle server's exit.
    command = [sys.executable, "-m", "tests.peers.mcp_server", "--stdio"]
    spec = McpServerSpec(id="piped", command=command)
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        first = await registry.execute(make_call("piped/process_id", {}))
        os.kill(first.output["result"], signal.SIGKILL)
        session = registry.catalog.sessions.get("piped")
        await eventually(session._server_exited)
        outcome = await registry.execute(make_call("piped/echo", {"text": "after"}))
        assert outcome.output == {"result": "after"}
        second = await registry.execute(make_call("piped/process_id", {}))
        assert second.output["result"] != first.output["result"]
        assert session.connects == 2
    finally:
        await registry.close()


# A stdio server that cannot start: Python's own error for a module that is not there.
NOT_STARTING = (
    "import sys; sys.stderr.write('Traceback (most recent call last):\\n"
    "ModuleNotFoundError: No module named my_tools\\n'); sys.exit(1)"
)


async def test_a_stdio_server_that_cannot_start_is_reported_with_its_stderr(
    make_call: MakeCall, caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK alone says "Connection closed"; why is in what the server wrote to stderr.
    spec = McpServerSpec(id="local", command=[sys.executable, "-c", NOT_STARTING], tools=("x",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        with caplog.at_level("INFO", logger="trellis.mcp"):
            await registry.catalog.refresh()
        [server] = registry.catalog.servers()
        assert server.status == "down"
        assert server.error is not None
        assert "Connection closed" in server.error
        assert "No module named my_tools" in server.error
        assert "MCP server local stderr: ModuleNotFoundError" in caplog.text
        with pytest.raises(TransientError, match="No module named my_tools"):
            await registry.execute(make_call("local/x", {}))
    finally:
        await registry.close()


# A stdio server that cannot start and says why with the credentials its env gave it.
TELLING = (
    "import os, sys; sys.stderr.write('cannot sign in as ' + os.environ['LOGIN'] + ' with '"
    " + os.environ['AUTH'] + ' (' + os.environ['TOKEN'] + ') at ' + os.environ['DEBUG']"
    " + ' by ' + sys.argv[1] + '\\n'); sys.exit(3)"
)


async def test_a_stdio_servers_stderr_never_shows_the_secrets_its_env_holds(
    make_call: MakeCall, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    # Its lines reached the logs, /servers' error, the step's error and the run's summary
    # as written, the token with them.
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        yaml.safe_dump(
            {"mcpServers": [{
                "id": "telling", "command": [sys.executable, "-c", TELLING, "${ARG_TOKEN}"],
                "tools": ["x"],
                "env": {"TOKEN": "${STDIO_TOKEN}", "AUTH": "Bearer ${OTHER_TOKEN}",
                        "LOGIN": "svc-reporting", "DEBUG": "1"},
            }]}
        )
    )  # fmt: skip
    environ = {"STDIO_TOKEN": "stdiosecret4242", "OTHER_TOKEN": "ot-99887766",
               "ARG_TOKEN": "argv-5511"}  # fmt: skip
    registry = ExecutorRegistry(Catalog(read_catalog_file(catalog, environ)))
    try:
        with caplog.at_level("INFO", logger="trellis.mcp"):
            await registry.catalog.refresh()
            [server] = registry.catalog.servers()
            with pytest.raises(TransientError) as raised:
                await registry.execute(make_call("telling/x", {}))
        said = "cannot sign in as *** with *** (***) at 1 by ***"
        assert server.error is not None and said in server.error
        assert said in str(raised.value)
        assert f"MCP server telling stderr: {said}" in caplog.text
        for secret in ("stdiosecret4242", "ot-99887766", "Bearer", "svc-reporting", "argv-5511"):
            assert secret not in caplog.text + server.error + str(raised.value)
    finally:
        await registry.close()


async def test_arguments_the_server_refuses_as_invalid_params_are_not_retried(
    make_call: MakeCall,
) -> None:
    # Valid against the tool's schema, refused by the server itself (JSON-RPC -32602): the
    # same arguments would be refused on every attempt.
    stats = McpStats()
    async with served_registry(stats, "strict") as registry:
        with pytest.raises(PermanentError, match="value 7 is not one this server takes"):
            await registry.execute(make_call("strict/refuses_arguments", {"value": 7}))
        assert registry.catalog.sessions.get("strict").connects == 1


async def test_session_reconnects_after_the_server_restarts(make_call: MakeCall) -> None:
    stats = McpStats()
    served = ServedApp(build_mcp_server(stats).streamable_http_app()).start()
    spec = McpServerSpec(id="restarting", url=f"{served.base_url}/mcp", tools=("echo",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.execute(make_call("echo", {"text": "before"}))
        served.stop()
        with pytest.raises(TransientError):
            await registry.execute(make_call("echo", {"text": "while down"}))
        # A fresh app on the same port (an app's session manager runs only once).
        served = ServedApp(build_mcp_server(stats).streamable_http_app(), port=served.port).start()
        outcome = await registry.execute(make_call("echo", {"text": "after"}))
        assert outcome.output == {"result": "after"}
    finally:
        await registry.close()
        served.stop()


def _refusing_large_requests(app: ASGIApp, limit: int, status: int) -> ASGIApp:
    """The MCP app behind a proxy that answers `status` to any request over `limit` bytes,
    with a plain-text body (not a JSON-RPC error), as a web server's body limit does."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        length = int(dict(scope.get("headers", [])).get(b"content-length", b"0"))
        if scope["type"] == "http" and length > limit:
            await PlainTextResponse("refused by the proxy", status_code=status)(
                scope, receive, send
            )
            return
        await app(scope, receive, send)

    return asgi


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [
        (413, PermanentError, "HTTP 413 Request Entity Too Large"),
        (503, TransientError, "HTTP 503 Service Unavailable"),
    ],
)
async def test_a_call_refused_with_an_http_status_names_it(
    make_call: MakeCall, status: int, error: type[Exception], says: str
) -> None:
    # The SDK reports any such answer as "Server returned an error response"; a request
    # too large is refused on every attempt (permanent), an unavailable server may recover.
    stats = McpStats()
    app = _refusing_large_requests(build_mcp_server(stats).streamable_http_app(), 4000, status)
    served = ServedApp(app).start()
    spec = McpServerSpec(id="limited", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.refresh()
        with pytest.raises(error, match=f"MCP call limited/echo (refused|failed): .*{says}$"):
            await registry.execute(make_call("limited/echo", {"text": "x" * 5000}))
        assert stats.methods["tools/call"] == 0  # the proxy answered, not the tool
        # An answer, not a broken connection: the session stays, and serves the next call.
        small = await registry.execute(make_call("limited/echo", {"text": "small"}))
        assert small.output == {"result": "small"}
        assert registry.catalog.sessions.get("limited").connects == 1
    finally:
        await registry.close()
        served.stop()


async def test_a_tool_of_a_server_down_at_start_is_found_when_a_step_names_it(
    make_call: MakeCall,
) -> None:
    port = free_port()
    spec = McpServerSpec(id="late", url=f"http://127.0.0.1:{port}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    served = None
    try:
        await registry.catalog.start()  # the server is down: no tools listed
        assert registry.catalog.resolve("add") is None
        served = ServedApp(build_mcp_server().streamable_http_app(), port=port).start()
        # No refresh in between: the step asks the server itself.
        outcome = await registry.execute(make_call("add", {"a": 1, "b": 2}))
        assert outcome.output == {"total": 3}
    finally:
        await registry.close()
        await registry.catalog.close()
        if served:
            served.stop()


async def test_a_tool_added_to_a_running_server_is_found_when_a_step_names_it(
    make_call: MakeCall,
) -> None:
    # The server answered its listing before the tool was added: the step failed for
    # good ("unknown executorKey") until the worker's next refresh, though the API, asked
    # again, had accepted the definition.
    server = build_mcp_server()
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="growing", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.start()
        assert registry.catalog.resolve("growing/late_tool") is None

        def late_tool(q: str) -> str:
            return f"late:{q}"

        server.add_tool(late_tool, name="late_tool")
        # No refresh in between: the step asks the server itself.
        outcome = await registry.execute(make_call("growing/late_tool", {"q": "x"}))
        assert outcome.output == {"result": "late:x"}
        with pytest.raises(PermanentError, match="unknown executorKey"):
            await registry.execute(make_call("growing/never_added", {}))
    finally:
        await registry.close()
        await registry.catalog.close()
        served.stop()


async def test_a_tool_whose_schema_changed_on_the_server_is_checked_against_the_new_one(
    make_call: MakeCall,
) -> None:
    # Checked against the session's listing only, the step failed for good ("a:
    # required") without asking the server, until the worker's next refresh.
    stats = McpStats()
    server = build_mcp_server(stats)
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="evolving", url=f"{served.base_url}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))

    def old_evolving(a: int) -> str:
        return f"old:{a}"

    def new_evolving(b: str) -> str:
        return f"new:{b}"

    try:
        server.add_tool(old_evolving, name="evolving")
        await registry.catalog.refresh()
        server.remove_tool("evolving")
        server.add_tool(new_evolving, name="evolving")
        outcome = await registry.execute(make_call("evolving/evolving", {"b": "x"}))
        assert outcome.output == {"result": "new:x"}
        # Arguments the server's schema of now refuses too are permanent, named by it.
        with pytest.raises(PermanentError, match="b: required"):
            await registry.execute(make_call("evolving/evolving", {"a": 1}))
        assert stats.methods["tools/call"] == 1
    finally:
        await registry.close()
        await registry.catalog.close()
        served.stop()


async def test_a_key_no_listed_server_offers_is_retryable_while_a_server_is_down(
    make_call: MakeCall,
) -> None:
    spec = McpServerSpec(id="late", url=f"http://127.0.0.1:{free_port()}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.start()
        with pytest.raises(TransientError, match="'late', which did not answer"):
            await registry.execute(make_call("add", {"a": 1, "b": 2}))
        with pytest.raises(TransientError, match="MCP server 'late' is down"):
            await registry.execute(make_call("late/add", {"a": 1, "b": 2}))
    finally:
        await registry.close()
        await registry.catalog.close()


async def test_a_key_of_a_removed_server_or_agent_says_so_not_that_others_are_down(
    make_call: MakeCall,
) -> None:
    # An audit: both were "unknown executorKey: … ; MCP server(s) 'late' did not answer,
    # so the tools they offer are unknown", though 'late' cannot offer `gone/echo`.
    spec = McpServerSpec(id="late", url=f"http://127.0.0.1:{free_port()}/mcp")
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        await registry.catalog.start()
        with pytest.raises(PermanentError) as server_gone:
            await registry.execute(make_call("gone/echo", {}))
        assert str(server_gone.value) == (
            "unknown executorKey: no MCP server 'gone' in the executor catalog"
            " (its servers are 'late')"
        )
        # A bare name could be a tool of the server that is down: that is worth a retry.
        with pytest.raises(TransientError) as agent_gone:
            await registry.execute(make_call("removed-agent", {}))
        assert str(agent_gone.value) == (
            "unknown executorKey: 'removed-agent' is not a built-in, an MCP tool or an A2A"
            " agent in the executor catalog; it can only be a tool of MCP server(s) 'late',"
            " which did not answer"
        )
    finally:
        await registry.close()
        await registry.catalog.close()


async def test_a_key_naming_a_server_that_is_down_says_so_not_that_it_offers_nothing() -> None:
    # What a down server offers is unknown: a save's check must not say "offers no tool".
    spec = McpServerSpec(id="late", url=f"http://127.0.0.1:{free_port()}/mcp")
    catalog = Catalog(CatalogFile(servers=(spec,)))
    try:
        await catalog.refresh()
        found = catalog.resolution("late/add")
        assert isinstance(found, str)
        assert found.startswith("MCP server 'late' is down, so its tool 'add' cannot be checked: ")
        assert "offers no tool" not in found
    finally:
        await catalog.close()


async def test_an_unknown_key_is_permanent_when_every_server_answered(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="unknown executorKey"):
        await registry.execute(make_call("no-such-tool", {}))
    with pytest.raises(PermanentError, match="offers no tool 'nothing'"):
        await registry.execute(make_call("peer-http/nothing", {}))
