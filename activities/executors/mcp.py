"""MCP tool steps: check the rendered config against the tool's input schema, call, map the result.

Errors: arguments that do not match the schema and tools the server no longer offers are
permanent, once the server has listed its tools again (the session's listing may be
stale); `isError` results, protocol and connection failures are retryable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import mcp_types
from jsonschema.protocols import Validator
from mcp.shared.exceptions import MCPError

from activities.executors.base import (
    PermanentError,
    StepCall,
    StepOutcome,
    TransientError,
    describe_error,
    payload_config,
)
from activities.executors.sessions import HttpRefused, McpSession, McpSessions
from activities.executors.tracing import CallTracer, trace_context


class McpExecutor:
    """Calls one tool on one catalog server over that server's shared session."""

    def __init__(
        self,
        sessions: McpSessions,
        calls: CallTracer | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._sessions = sessions
        self._calls = calls or CallTracer()
        # The catalog's `redacted`: a client's error may quote the server's URL, token and all.
        self._redact = redact or (lambda text: text)

    async def call(self, call: StepCall, server_id: str, tool_name: str) -> StepOutcome:
        session = self._sessions.get(server_id)
        arguments = payload_config(call.config)
        tool = (await self._tools(session, server_id)).get(tool_name)
        if tool is None or not _matches(session, tool, arguments):
            # The listing may be stale (the tool added, removed or its schema changed on the
            # server since): only the server's listing of now fails the step for good.
            tool = (await self._tools(session, server_id, refresh=True)).get(tool_name)
            if tool is None:
                raise PermanentError(
                    f"MCP server {server_id!r} no longer offers tool {tool_name!r}"
                )
            check_arguments(tool_name, session.validator(tool), arguments)
        # OpenTelemetry's MCP conventions: `{method} {tool}`, the context in `_meta`.
        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "trellis.mcp.server": server_id,
        }
        with self._calls.span(f"tools/call {tool_name}", attributes):
            meta = {**call.request_meta(), **trace_context()}
            try:
                result = await session.call_tool(tool_name, arguments, meta=meta)
            except Exception as exc:
                reason = self._redact(describe_error(exc))
                if _OUTSIDE_OUTPUT_SCHEMA.match(str(exc)) and isinstance(exc, RuntimeError):
                    # The SDK checked the answer against the tool's own output schema; its
                    # message quotes the answer, so it is cut short (and redacted).
                    said = reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS] + "…"
                    raise PermanentError(
                        f"MCP tool {tool_name!r} answered outside its own output schema: {said}"
                    ) from None
                if connection_lost(exc):
                    await session.reset()
                else:  # an answer: perhaps "unknown tool", the listing being stale
                    await _unless_gone(session, server_id, tool_name)
                if (isinstance(exc, MCPError) and exc.code in _REFUSED_AS_ASKED) or (
                    isinstance(exc, HttpRefused) and exc.status in _REFUSED_STATUSES
                ):
                    raise PermanentError(
                        f"MCP call {server_id}/{tool_name} refused: {reason}"
                    ) from None
                raise TransientError(f"MCP call {server_id}/{tool_name} failed: {reason}") from None
            if result.is_error:
                await _unless_gone(session, server_id, tool_name)
                reason = self._redact(_text(result))
                raise TransientError(f"MCP tool {tool_name!r} reported an error: {reason}")
        return StepOutcome(
            output=result_output(result),
            resolved_executor={
                "kind": "mcp",
                "key": call.executor_key,
                "server": server_id,
                "tool": tool_name,
            },
        )

    async def _tools(
        self, session: McpSession, server_id: str, refresh: bool = False
    ) -> dict[str, mcp_types.Tool]:
        try:
            return await session.tools(refresh=refresh)
        except Exception as exc:
            await session.reset()
            reason = self._redact(describe_error(exc))
            raise TransientError(f"MCP server {server_id!r} unreachable: {reason}") from None


def _matches(session: McpSession, tool: mcp_types.Tool, arguments: dict[str, Any]) -> bool:
    """Whether `arguments` match the tool's input schema as the session listed it."""
    try:
        check_arguments(tool.name, session.validator(tool), arguments)
    except PermanentError:
        return False
    return True


async def _unless_gone(session: McpSession, server_id: str, tool_name: str) -> None:
    """After a failed call, list the tools again: a tool the server removed since the
    listing was taken (it answers "unknown tool") is permanent, not worth a retry."""
    try:
        tools = await session.tools(refresh=True)
    except Exception:  # the call's own failure is what the step reports
        return
    if tool_name not in tools:
        raise PermanentError(
            f"MCP server {server_id!r} no longer offers tool {tool_name!r}"
        ) from None


# The SDK's own codes for a connection it can no longer use: closed, the server forgot the
# session ("Session terminated"), a stream it could not parse.
_CONNECTION_LOST = frozenset(
    {mcp_types.CONNECTION_CLOSED, mcp_types.INVALID_REQUEST, mcp_types.PARSE_ERROR}
)


# Characters of an error quoting a tool's answer kept in the step's error.
REASON_CHARS = 500
# What the SDK raises (a RuntimeError, no type of its own) when a tool's answer does not
# match the tool's own output schema: the server's fault, and the tool has run.
_OUTSIDE_OUTPUT_SCHEMA = re.compile(
    r"Tool \S.* has an output schema but did not return structured content"
    r"|Invalid structured content returned by tool |Invalid schema for tool "
)


# JSON-RPC errors that refuse the request as it was made (its arguments, or tools/call
# itself): the same call would be refused again, so no attempt is retried.
_REFUSED_AS_ASKED = frozenset({mcp_types.INVALID_PARAMS, mcp_types.METHOD_NOT_FOUND})
# HTTP statuses that refuse the request as it was made (malformed, too large, of a type
# or shape the server does not take); others (401, 403, 408, 429, 5xx) may pass later.
_REFUSED_STATUSES = frozenset({400, 405, 411, 413, 414, 415, 422, 431})


def connection_lost(exc: Exception) -> bool:
    """Whether a call's failure means its session must reconnect.

    An error the server answered with (a JSON-RPC error) says the connection works: it is
    left open, so the calls sharing it (a parallel block's children) go on.
    """
    if isinstance(exc, HttpRefused):
        return False  # the server answered this call; the connection serves the others
    return not isinstance(exc, MCPError) or exc.code in _CONNECTION_LOST


def check_arguments(tool_name: str, validator: Validator, arguments: dict[str, Any]) -> None:
    """Raise PermanentError naming every field that does not match the tool's input schema."""
    problems: list[str] = []
    for error in validator.iter_errors(arguments):
        if error.validator == "required" and isinstance(error.instance, dict):
            path = ".".join(str(p) for p in error.absolute_path)
            missing = [r for r in error.validator_value if r not in error.instance]
            problems += [f"{path + '.' if path else ''}{m}: required" for m in missing]
        else:
            field = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            problems.append(f"{field}: {error.message}")
    if problems:
        raise PermanentError(
            f"arguments for MCP tool {tool_name!r} do not match its input schema: "
            + "; ".join(sorted(problems))
        )


def result_output(result: mcp_types.CallToolResult) -> Any:
    """structuredContent when present; else the content (JSON text parsed, several → a list)."""
    if result.structured_content is not None:
        return result.structured_content
    values = [_content_value(item) for item in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _content_value(item: Any) -> Any:
    if isinstance(item, mcp_types.TextContent):
        try:
            return json.loads(item.text)
        except ValueError:
            return item.text
    return item.model_dump(mode="json", by_alias=True, exclude_none=True)


def _text(result: mcp_types.CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, mcp_types.TextContent)]
    return " ".join(" ".join(texts).split())[:1000] or "(no message)"
