"""Asking the catalog's peers what they offer: a server's tool listing, an agent's card,
and what the catalog routes show of each (a peer that does not answer is "down", saying
why)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx
from a2a.types.a2a_pb2 import AgentCard

from activities.executors.a2a_errors import describe_a2a_error
from activities.executors.agent_card import fetch_card
from activities.executors.base import describe_error
from activities.executors.catalog_file import CatalogFile, McpServerSpec
from activities.executors.catalog_models import AgentInfo, ServerInfo, SkillInfo, ToolInfo
from activities.executors.endpoint import Endpoint
from activities.executors.tls import default_tls
from activities.executors.url_mask import masked_url

if TYPE_CHECKING:  # the MCP SDK takes a second to import: only a catalog with servers does
    from activities.executors.sessions import McpSession

# An error message as the catalog may show it (`Catalog.redacted`).
Redact = Callable[[str], str]


def shown_url(url: str) -> str:
    """A URL as the catalog routes show it: a password and the query values written into
    it are masked (any may be a token), as `builtin:http` shows its URL."""
    return masked_url(url)


def initial_server(spec: McpServerSpec, file: CatalogFile) -> ServerInfo:
    """A server as shown before its first listing."""
    return ServerInfo(
        id=spec.id,
        transport="streamable-http" if spec.url else "stdio",
        url=shown_url(file.written(spec.url)) if spec.url else None,
        command=file.written_command(spec),
        tools_source="static" if spec.tools is not None else "discovered",
        tools=[ToolInfo(name=n) for n in spec.tools or ()],
    )


async def listed_server(
    info: ServerInfo, spec: McpServerSpec, session: McpSession, seconds: float, redact: Redact
) -> ServerInfo:
    """The server as its tool listing, given `seconds`, shows it now; or down saying why."""
    now = datetime.now(UTC)
    try:
        async with asyncio.timeout(seconds):
            listed = await session.tools(refresh=True)
    except Exception as exc:
        await session.reset()
        error = redact(describe_error(exc))
        if isinstance(exc, TimeoutError) and error == "TimeoutError":
            error = f"TimeoutError: no tool listing within {seconds:g} s"
        return info.model_copy(update={"status": "down", "error": error, "checked_at": now})
    tools = [
        ToolInfo(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in listed.values()
        if spec.tools is None or t.name in spec.tools
    ]
    if spec.tools is not None:  # declared tools stay resolvable even if the server lost one
        seen = {t.name for t in tools}
        tools += [ToolInfo(name=n) for n in spec.tools if n not in seen]
    return info.model_copy(
        update={"status": "up", "error": None, "tools": tools, "checked_at": now}
    )


def discovery_client(timeout: float) -> httpx.AsyncClient:
    """The client agents' cards are fetched with. No connection kept between refreshes:
    an agent closes an idle one within seconds, and a kept one sat half-closed
    (CLOSE-WAIT) for the whole interval."""
    return httpx.AsyncClient(
        timeout=timeout, verify=default_tls(), limits=httpx.Limits(max_keepalive_connections=0)
    )


async def fetched_card(
    endpoint: Endpoint, http: httpx.AsyncClient, redact: Redact
) -> AgentCard | str:
    """The agent's card, or why it could not be fetched."""
    try:
        # Its own client, acting for nobody: the card's URL is the catalog's, and
        # redirects are not followed, so the catalog's headers go with the request.
        kwargs: dict[str, object] = {"headers": dict(endpoint.headers)}
        return await fetch_card(http, endpoint.url, kwargs)
    except Exception as exc:
        return redact(describe_a2a_error(exc))


def agent_info(info: AgentInfo, card: AgentCard) -> AgentInfo:
    """The agent as `card` shows it: up, with its skills."""
    skills = [
        SkillInfo(
            id=s.id,
            name=s.name,
            description=s.description,
            tags=list(s.tags),
            examples=list(s.examples),
        )
        for s in card.skills
    ]
    return info.model_copy(
        update={
            "status": "up",
            "error": None,
            "card_name": card.name,
            "description": card.description,
            "version": card.version,
            "streaming": card.capabilities.streaming,
            "skills": skills,
        }
    )
