"""The test MCP server: `echo`, `add` (structured), `flaky`, `broken` (an error result),
`refuses` (a JSON-RPC error), `environment`, `quote_secret` (an error result quoting an
environment variable or a request header: a tool echoing its token), the contract's
tool names.

Served over streamable HTTP by `tests.peers.catalog`, or over stdio with
`python -m tests.peers.mcp_server --stdio`. `McpStats` counts requests by method on the
server side (handshakes are `server/discover` / `initialize`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import BaseModel

from activities.executors.base import IDEMPOTENCY_META_KEY

# Tools that return the arguments they were called with (object, as JSON text content).
ECHO_TOOLS = (
    "mcp-email-validator",
    "mcp-email-sender",
    "mcp-phone-verifier",
    "mcp-slack-notifier",
    "mcp-crm-integration",
    "mcp-enterprise-provisioner",
    "mcp-standard-provisioner",
    *(f"tool-{c}" for c in "abcdefgh"),
    "data-validator",
    "email-sender",
)
HANDSHAKE_METHODS = ("server/discover", "initialize")


@dataclass
class McpStats:
    methods: Counter[str] = field(default_factory=Counter)
    flaky_attempts: Counter[str] = field(default_factory=Counter)
    # `apply_effect`: calls received and side effects performed, by idempotency key.
    effect_calls: Counter[str] = field(default_factory=Counter)
    effects: Counter[str] = field(default_factory=Counter)
    # `sleepy`: naps begun, and naps the client cancelled (`notifications/cancelled`).
    naps: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def handshakes(self) -> int:
        return sum(self.methods[m] for m in HANDSHAKE_METHODS)


class Sum(BaseModel):
    total: int


def build_mcp_server(stats: McpStats | None = None) -> MCPServer:
    """A fresh server whose requests are counted in `stats`."""
    stats = stats or McpStats()

    async def count(ctx: Any, call_next: Any) -> Any:
        with stats.lock:
            stats.methods[ctx.method] += 1
        return await call_next(ctx)

    server = MCPServer("trellis-test-peer", middleware=[count])

    @server.tool(description="Return the text it was given.")
    def echo(text: str = "") -> str:
        return text

    @server.tool(description="Add two integers; structured result.")
    def add(a: int, b: int) -> Sum:
        return Sum(total=a + b)

    @server.tool(description="Fail `failures` times per key, then succeed.")
    def flaky(key: str, failures: int = 2) -> dict[str, Any]:
        with stats.lock:
            stats.flaky_attempts[key] += 1
            attempt = stats.flaky_attempts[key]
        if attempt <= failures:
            raise ToolError(f"flaky failure {attempt} of {failures} for {key}")
        return {"key": key, "attempts": attempt}

    @server.tool(description="Always reports an error (after `seconds`).")
    async def broken(seconds: float = 0.0) -> str:
        await asyncio.sleep(seconds)
        raise ToolError("broken tool always fails")

    @server.tool(description="Fails: the server answers with a JSON-RPC internal error.")
    def refuses() -> str:
        raise MCPError(INTERNAL_ERROR, "refused by the server")

    @server.tool(description="Refuses its arguments with JSON-RPC's invalid params.")
    def refuses_arguments(value: int = 0) -> str:
        raise MCPError(INVALID_PARAMS, f"value {value} is not one this server takes")

    @server.tool(description="This server's process id (a test stops it by it).")
    def process_id() -> int:
        return os.getpid()

    @server.tool(description="The environment variables this server's process has.")
    def environment() -> dict[str, str]:
        return dict(os.environ)

    @server.tool(description="Fails quoting an environment variable's or a header's value.")
    def quote_secret(ctx: Context, env: str = "", header: str = "") -> str:
        request = ctx.request_context.request  # None over stdio
        headers = getattr(request, "headers", {})
        token = os.environ.get(env) if env else headers.get(header)
        print(f"debug: using token {token} for upstream", file=sys.stderr, flush=True)
        raise ToolError(f"upstream refused token {token}")

    @server.tool(description="A text of `size` bytes (a large result).")
    def large(size: int) -> dict[str, Any]:
        return {"text": "x" * size, "size": size}

    @server.tool(description="A list of `count` zeros (a result of many small values).")
    def many(count: int) -> dict[str, Any]:
        return {"values": [0] * count}

    @server.tool(description="Sleep, then answer; a cancelled nap is counted.")
    async def sleepy(seconds: float = 1.0) -> str:
        with stats.lock:
            stats.naps["begun"] += 1
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:  # how the server applies the client's cancellation
            with stats.lock:
                stats.naps["cancelled"] += 1
            raise
        return "awake"

    def echo_arguments(ctx: Context) -> dict[str, Any]:
        return dict((ctx.request_context.params or {}).get("arguments") or {})

    @server.tool(description="The `_meta` of this request, as the server received it.")
    def request_meta(ctx: Context) -> dict[str, Any]:
        return dict((ctx.request_context.params or {}).get("_meta") or {})

    @server.tool(
        description="Perform a side effect once per idempotency key, after `seconds`; "
        "the first `failures` calls of a key fail."
    )
    async def apply_effect(
        ctx: Context, target: str, seconds: float = 0.0, failures: int = 0
    ) -> dict[str, Any]:
        meta = (ctx.request_context.params or {}).get("_meta") or {}
        key = str(meta.get(IDEMPOTENCY_META_KEY) or "")
        if not key:
            raise ToolError("apply_effect needs an idempotency key in _meta")
        with stats.lock:
            stats.effect_calls[key] += 1
            calls = stats.effect_calls[key]
        if calls <= failures:
            raise ToolError(f"apply_effect failure {calls} of {failures} for {key}")
        await asyncio.sleep(seconds)
        with stats.lock:
            # Like a payment API: the first completed call performs it; repeats answer alike.
            if not stats.effects[key]:
                stats.effects[key] += 1
        return {"target": target, "key": key}

    for name in ECHO_TOOLS:
        server.add_tool(echo_arguments, name=name, description=f"{name}: echoes its arguments")
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    parser.add_argument("--port", type=int, default=9001, help="streamable HTTP port")
    parser.add_argument(
        "--announce", metavar="VAR", help="over stdio: first print VAR's value to stdout"
    )
    args = parser.parse_args()
    server = build_mcp_server()
    if args.stdio and args.announce:  # a line that is not JSON-RPC, the token in it
        print(f"connected upstream with secret {os.environ[args.announce]}", flush=True)
    if args.stdio:
        server.run("stdio")
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
