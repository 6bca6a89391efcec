"""Long-lived MCP client sessions, one per catalog server, reused by every call in a process.

The `mcp` Client holds anyio task groups that must be entered and left by one task, so
each session is owned by a background task; callers in other tasks (activities) share
its connected Client. A session that fails is dropped and reconnects on the next use;
stdio servers are spawned once per session, not per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from importlib.metadata import version as package_version
from typing import Any

import httpx2
import jsonschema
import mcp_types
from jsonschema.protocols import Validator
from mcp import Client, StdioServerParameters
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from activities.executors.a2a_errors import REFUSED_HINT
from activities.executors.base import IDEMPOTENCY_META_KEY, PermanentError
from activities.executors.catalog_file import McpServerSpec
from activities.executors.service_token import acting_for
from activities.executors.stderr_tail import StderrTail
from activities.executors.stdout_noise import serving_server

CONNECT_TIMEOUT_SECONDS = 15.0
# How Trellis introduces itself in the handshake (the SDK's default says `mcp 0.1.0`).
CLIENT_INFO = mcp_types.Implementation(name="trellis", version=package_version("trellis"))
# The SDK's own defaults for its HTTP client: a server may hold a response stream open.
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# Its pool is unbounded; idle connections go after 4 s rather than its 5, so a server's
# own idle timeout (uvicorn's default is 5 s) never closes one as a call goes out on it.
HTTP_LIMITS = httpx2.Limits(keepalive_expiry=4.0)
# A tool's result arrives as one SSE event; the SDK's default cap (1 MiB) would refuse a
# large result. Bounded all the same, so a misbehaving server cannot exhaust memory; the
# step output limit (TRELLIS_MAX_PAYLOAD_BYTES) applies after.
MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024
# What the SDK reports for an HTTP error status whose body is no JSON-RPC error.
SDK_STAND_IN = (mcp_types.INTERNAL_ERROR, "Server returned an error response")
# ... and for a 404 before a session exists (a wrong path, most often): it names no status.
SDK_NOT_FOUND = (mcp_types.METHOD_NOT_FOUND, "Not Found")
# HTTP statuses of tool calls not yet reported, kept at most this many (a bound, not a size).
REFUSALS_KEPT = 1000


class HttpRefused(Exception):
    """A tool call the server answered with an HTTP error status and no JSON-RPC error:
    the SDK reports only "Server returned an error response", so its status is kept here."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}".strip())
        self.status = status


def _call_key(body: bytes) -> str | None:
    """The idempotency key of a `tools/call` request body; None for any other request."""
    try:
        message = json.loads(body)
        key = message["params"]["_meta"][IDEMPOTENCY_META_KEY]
    except (ValueError, TypeError, KeyError):
        return None
    return key if message.get("method") == "tools/call" and isinstance(key, str) else None


def _method(body: bytes) -> str:
    """The JSON-RPC method of a request body ("request" when it names none)."""
    try:
        method = json.loads(body).get("method")
    except (ValueError, AttributeError):
        return "request"
    return method if isinstance(method, str) else "request"


# What an HTTP status at the handshake most likely means about the catalog's `url`.
# A refused token is said as an A2A agent's is (a2a_errors.REFUSED_HINT).
_HINTS = {
    401: REFUSED_HINT,
    403: REFUSED_HINT,
    404: " (check the url's path: streamable HTTP servers serve at /mcp by default)",
    405: " (a legacy SSE server? Trellis speaks MCP's streamable HTTP)",
}


class HandshakeRefused(Exception):
    """The server answered the handshake or a listing with an HTTP error status (a wrong
    token's 401, a wrong path's 404, a legacy SSE server's 405), where the SDK says only
    "Server returned an error response" or "Not Found"."""

    def __init__(self, status: int, reason: str, method: str) -> None:
        said = f"HTTP {status} {reason}".strip()
        super().__init__(f"{said} to {method}{_HINTS.get(status, '')}")
        self.status = status


def _isolated(spec: McpServerSpec, search_path: str) -> StdioServerParameters:
    """Spawn parameters giving a stdio server only its entry's env and PATH.

    The SDK adds a few variables of ours to whatever env it is given (HOME, USER, ...);
    `env -u` takes them away again, so a server sees exactly what its entry declares.
    """
    assert spec.command is not None
    env = {"PATH": search_path, **spec.env}
    unset = [arg for name in DEFAULT_INHERITED_ENV_VARS if name not in env for arg in ("-u", name)]
    program = shutil.which("env", path=search_path) or "/usr/bin/env"
    return StdioServerParameters(command=program, args=[*unset, "--", *spec.command], env=env)


@contextlib.asynccontextmanager
async def _watched(transport: Any, session: McpSession) -> AsyncIterator[Any]:
    """A stdio transport whose read stream the session keeps, to see it end: the server's
    stdout closes when it exits, which the SDK notices only at the next request."""
    async with transport as streams:
        session._stdio_stream = streams[0]
        yield streams


class McpSession:
    """One connection to one MCP server; connects lazily, reconnects after `reset`."""

    def __init__(self, spec: McpServerSpec, search_path: str = "/usr/bin:/bin") -> None:
        self.spec = spec
        self.search_path = search_path
        # Adds a service token to each request sent while a step acts for a caller.
        self.auth: Any = None
        self.connects = 0
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._tools: dict[str, mcp_types.Tool] | None = None
        # Argument validators by tool name, built once per listing (not once per call).
        self._validators: dict[str, Validator] = {}
        # A refused tool call's HTTP status and reason, by the call's idempotency key.
        self._refusals: dict[str, tuple[int, str]] = {}
        # The last request other than a tool call refused with an HTTP status.
        self._refused: HandshakeRefused | None = None
        # A stdio server's stream of messages to us (`_watched`).
        self._stdio_stream: Any = None

    async def _connect(
        self, stack: contextlib.AsyncExitStack, stderr: StderrTail | None = None
    ) -> Client:
        """A connected client; what it holds closes with `stack`."""
        if self.spec.url:
            # The catalog's headers (and a password of its URL, as Basic auth) go on every
            # request of this server's session: all go to its URL, and the SDK follows a
            # redirect only within the URL's origin. The URL itself carries no password.
            endpoint = self.spec.endpoint
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(endpoint.headers),
                    timeout=HTTP_TIMEOUT,
                    limits=HTTP_LIMITS,
                    auth=self._authenticate,
                    event_hooks={"response": [self._note_refusal]},
                )
            )
            target: Any = streamable_http_client(
                endpoint.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES
            )
        else:
            assert stderr is not None
            params = _isolated(self.spec, self.search_path)
            target = _watched(stdio_client(params, errlog=stderr.writer), self)
        try:
            client = Client(target, cache=None, client_info=CLIENT_INFO)
            return await stack.enter_async_context(client)
        finally:
            if stderr is not None:
                stderr.spawned()

    async def _note_refusal(self, response: httpx2.Response) -> None:
        """Keep the HTTP status a tool call was refused with (413 for too large a request,
        say), for `call_tool` to report. Only error answers are looked at."""
        if response.status_code < 400 or response.request.method != "POST":
            return
        try:
            body = response.request.content
        except httpx2.RequestNotRead:  # a streamed body: not a tool call of the SDK's
            return
        key = _call_key(body)
        if key is not None:
            if len(self._refusals) >= REFUSALS_KEPT:
                self._refusals.clear()
            self._refusals[key] = (response.status_code, response.reason_phrase)
        else:
            self._refused = HandshakeRefused(
                response.status_code, response.reason_phrase, _method(body)
            )

    def _named(self, exc: BaseException) -> BaseException:
        """The SDK's stand-in for an HTTP error status, replaced by the status it stands in
        for; any other error as it is."""
        refused, self._refused = self._refused, None
        inner = exc  # anyio's task groups wrap what they raise
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        if refused is None or not isinstance(inner, MCPError):
            return exc
        said = (inner.code, inner.message)
        stand_in = said == SDK_STAND_IN or (said == SDK_NOT_FOUND and refused.status == 404)
        return refused if stand_in else exc

    def _authenticate(self, request: httpx2.Request) -> httpx2.Request:
        # Looked up per request, so a session opened before `auth` was set still uses it.
        return self.auth(request) if self.auth is not None else request

    async def client(self) -> Client:
        """The connected client, connecting first when needed."""
        async with self._lock:
            owned = self._owner is not None and not self._owner.done()
            if self._client is not None and owned and not self._server_exited():
                return self._client
            await self._drop()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready, self._stop))
            self.connects += 1
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                    self._client = await ready
            except BaseException as exc:
                await self._drop()
                named = self._named(exc)
                if named is exc:
                    raise
                raise named from None
            return self._client

    def _server_exited(self) -> bool:
        """Whether a stdio server's stdout has closed (it exited, or was killed, while no
        call was out): the next call connects afresh rather than fail on the old session."""
        stream = self._stdio_stream
        if stream is None:
            return False
        statistics = getattr(stream, "statistics", None)
        return statistics is not None and statistics().open_send_streams == 0

    async def _own(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        # This task outlives the call that started it and serves every run: it must not act
        # for that call's caller (the handshake and the GET stream send no service token).
        try:
            with acting_for(None):
                await self._serve(ready, stop)
        except BaseException as exc:  # the owner must never leak an error into the loop
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _serve(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        stderr = None if self.spec.url else StderrTail(self.spec.id, self.spec.secrets)
        if stderr is not None:  # this task's own context: the SDK's reader task inherits it
            serving_server.set(self.spec.id)
        try:
            async with contextlib.AsyncExitStack() as stack:
                ready.set_result(await self._connect(stack, stderr))
                await stop.wait()
        except Exception as exc:
            # A stdio server that ended before its handshake: its stderr says why.
            if stderr is not None and not ready.done():
                raise await stderr.explained(exc) from exc
            raise

    async def tools(self, refresh: bool = False) -> dict[str, mcp_types.Tool]:
        """The server's tools by name (listed once per connection unless refreshed)."""
        if self._tools is None or refresh:
            client = await self.client()
            listed: list[mcp_types.Tool] = []
            cursor: str | None = None
            while True:
                try:
                    page = await client.list_tools(cursor=cursor)
                except MCPError as exc:
                    named = self._named(exc)
                    if named is exc:
                        raise
                    raise named from None
                listed += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
            self._tools = {t.name: t for t in listed}
            self._validators = {}
        return self._tools

    def validator(self, tool: mcp_types.Tool) -> Validator:
        """The input-schema validator of a tool from the current listing."""
        found = self._validators.get(tool.name)
        if found is None:
            schema = dict(tool.input_schema)
            cls = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                # The server's fault, and the same on every attempt until it lists another.
                raise PermanentError(
                    f"MCP tool {tool.name!r} publishes an invalid input schema: {exc.message}"
                ) from None
            found = self._validators[tool.name] = cls(schema)
        return found

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call a tool; `meta` joins the request's `_meta` (the step's idempotency key)."""
        client = await self.client()
        request_meta = mcp_types.RequestParamsMeta(**meta) if meta else None  # type: ignore[typeddict-item]
        key = (meta or {}).get(IDEMPOTENCY_META_KEY)
        try:
            return await client.call_tool(name, arguments, meta=request_meta)
        except MCPError as exc:
            refusal = self._refusals.pop(key, None) if isinstance(key, str) else None
            # Only the SDK's stand-in: a JSON-RPC error the server sent says more.
            if refusal is None or (exc.code, exc.message) != SDK_STAND_IN:
                raise
            raise HttpRefused(*refusal) from None

    async def reset(self) -> None:
        """Forget a connection that failed; the next use reconnects."""
        async with self._lock:
            await self._drop()

    async def _drop(self) -> None:
        self._client = None
        self._stdio_stream = None
        self._tools = None
        self._validators = {}
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stop.set()
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(owner)
        except (Exception, asyncio.CancelledError):
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner


class McpSessions:
    """The sessions of every catalog server, keyed by server id."""

    def __init__(self, specs: list[McpServerSpec], search_path: str = "/usr/bin:/bin") -> None:
        self._sessions = {s.id: McpSession(s, search_path) for s in specs}

    def get(self, server_id: str) -> McpSession:
        return self._sessions[server_id]

    def use_auth(self, auth: Any) -> None:
        """Give every HTTP session's requests this `auth` (open sessions too)."""
        for session in self._sessions.values():
            session.auth = auth

    async def close(self) -> None:
        """Close every connection (stdio servers exit); sessions reconnect if used again."""
        await asyncio.gather(*(s.reset() for s in self._sessions.values()))
