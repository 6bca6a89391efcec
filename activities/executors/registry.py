"""The executor registry the step activity holds: one `execute` for every kind of step."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import httpx
from opentelemetry.trace import Tracer

from activities.executors.a2a import CONNECTION_LIMITS, A2AExecutor
from activities.executors.agent_credentials import agent_credentials
from activities.executors.base import (
    PermanentError,
    StepCall,
    StepOutcome,
    TransientError,
    called,
)
from activities.executors.builtin import BuiltinExecutor
from activities.executors.catalog import Catalog, ExecutorRef
from activities.executors.http_guard import HttpPolicy
from activities.executors.pool import PoolExecutor
from activities.executors.service_token import (
    Caller,
    ServiceTokenSigner,
    acting_for,
    service_token_auth,
)
from activities.executors.tls import default_tls
from activities.executors.tracing import CallTracer, send_trace_context

if TYPE_CHECKING:
    from activities.executors.mcp import McpExecutor


class ExecutorRegistry:
    """Dispatches a step to a built-in, an MCP tool, an A2A agent or an agent pool."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        http_policy: HttpPolicy | None = None,
        service_tokens: ServiceTokenSigner | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.catalog = catalog
        auth = service_token_auth(service_tokens)
        calls = CallTracer(tracer)
        # No read timeout: A2A streams may stay silent for long; each step has its own timeout.
        # Catalog agents are the operator's choice, so this client is not address-guarded;
        # an agent's credentials go only to its catalog origin (`agent_credentials`).
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, read=None),
            verify=default_tls(),
            limits=CONNECTION_LIMITS,
            auth=agent_credentials(auth),
            event_hooks={"request": [send_trace_context]},
        )
        catalog.use_auth(auth)
        self._calls = calls
        self.builtin = BuiltinExecutor(http_policy, calls)
        self.a2a = A2AExecutor(catalog, self._http, calls)
        self.pool = PoolExecutor(catalog, self.a2a)

    @cached_property
    def mcp(self) -> McpExecutor:
        """The MCP executor, made at the first MCP step: the MCP SDK is loaded only where
        the catalog names a server (`Catalog.sessions`)."""
        from activities.executors.mcp import McpExecutor

        return McpExecutor(self.catalog.sessions, self._calls, redact=self.catalog.redacted)

    async def execute(self, call: StepCall) -> StepOutcome:
        """Run one step attempt; PermanentError is non-retryable, anything else retryable."""
        with acting_for(_caller(call)):
            return await self._execute(call)

    async def _execute(self, call: StepCall) -> StepOutcome:
        if call.a2a_pool:
            return await self.pool.execute(call)
        key = call.executor_key
        if not key:
            raise PermanentError("the step names neither an executorKey nor an a2aPool")
        ref = await self.catalog.current_resolution(key)
        if isinstance(ref, str):
            # An ambiguous key stays so whatever a down server offers: that is no retry's.
            if not self.catalog.is_ambiguous(key) and (
                unlisted := self.catalog.unlisted_servers(key)
            ):
                # The definition was checked when saved: the tool may be on a server that
                # is down now, which is worth a retry, not the step's end. A `server/tool`
                # key's message already says that its server is down.
                said = f"unknown executorKey: {ref}"
                if "/" not in key:
                    servers = ", ".join(map(repr, unlisted))
                    said += (
                        f"; it can only be a tool of MCP server(s) {servers}, which did not answer"
                    )
                raise TransientError(said)
            raise PermanentError(f"unknown executorKey: {ref}")
        try:
            if ref.kind == "builtin":
                return await self.builtin.execute(call)
            if ref.kind == "mcp":
                assert ref.server_id is not None and ref.tool_name is not None
                return await self.mcp.call(call, ref.server_id, ref.tool_name)
            assert ref.agent_name is not None
            return await self.a2a.execute(call, ref.agent_name)
        except (TransientError, PermanentError) as exc:
            # The call was made: the failed node run names where it went.
            called(exc, _resolved(ref))
            raise

    def target(self, call: StepCall) -> tuple[str, dict[str, Any] | None]:
        """What an attempt of the step waits on (a timeout's error names it), and the
        executor it calls when that is one known executor (not a pool)."""
        if call.a2a_pool:
            return f"A2A pool {', '.join(call.a2a_pool)}", None
        ref = self.catalog.resolution(call.executor_key) if call.executor_key else None
        if ref is None or isinstance(ref, str):
            return f"executorKey {call.executor_key!r}", None
        if ref.kind == "mcp":
            return f"MCP tool {ref.server_id}/{ref.tool_name}", _resolved(ref)
        if ref.kind == "a2a":
            return f"A2A agent {ref.agent_name}", _resolved(ref)
        return ref.key, _resolved(ref)

    def kind_of(self, call: StepCall) -> str:
        """What runs the step, for metrics: `builtin`, `mcp`, `a2a`, `a2a_pool` or `unknown`."""
        if call.a2a_pool:
            return "a2a_pool"
        ref = self.catalog.resolution(call.executor_key) if call.executor_key else None
        return "unknown" if ref is None or isinstance(ref, str) else ref.kind

    async def plan(self, call: StepCall) -> dict[str, Any] | None:
        """For a pool step, the agent it will try first and why; None for other steps."""
        return await self.pool.plan(call) if call.a2a_pool else None

    async def close(self) -> None:
        """Close the HTTP client and every MCP session (stdio servers exit)."""
        await self.a2a.close()
        await self._http.aclose()
        await self.builtin.close()
        await self.catalog.close_sessions()


def _resolved(ref: ExecutorRef) -> dict[str, Any]:
    """A single executor's `resolvedExecutor`, as its own successful call records it."""
    if ref.kind == "mcp":
        return {"kind": "mcp", "key": ref.key, "server": ref.server_id, "tool": ref.tool_name}
    return {"kind": ref.kind, "key": ref.key}


def _caller(call: StepCall) -> Caller | None:
    if call.triggered_by is None:
        return None
    return Caller(
        identity=call.triggered_by,
        run_id=call.run_id,
        workflow_id=call.workflow_id,
        node_id=call.node_id,
        node_run_id=call.node_run_id,
        attempt=call.attempt,
    )
