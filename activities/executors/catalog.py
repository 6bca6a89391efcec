"""The executor catalog: what an `executorKey` / `a2aPool` entry names, and its live state.

A key resolves to a built-in (`builtin:…`), an MCP tool (`toolName`, or `serverId/toolName`
when two servers offer the name) or an A2A agent name. Servers are asked for their tools
and agents for their cards at `start()` and every `refresh_seconds`; one that is down is
reported and retried, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx
from a2a.types.a2a_pb2 import AgentCard

from activities.executors.a2a_errors import describe_a2a_error
from activities.executors.agent_card import fetch_card
from activities.executors.base import BUILTIN_PREFIX, describe_error
from activities.executors.builtin import BUILTIN_KEYS
from activities.executors.catalog_file import (
    CatalogError,
    CatalogFile,
    McpServerSpec,
    read_catalog_file,
)
from activities.executors.catalog_models import AgentInfo, ServerInfo, SkillInfo, ToolInfo
from activities.executors.catalog_secrets import catalog_secrets, secrets_masked
from activities.executors.catalog_source import CatalogSource
from activities.executors.endpoint import Endpoint, split_userinfo
from activities.executors.tls import default_tls
from activities.executors.url_mask import masked_url, urls_masked
from temporal_workflows.definition import WorkflowSpec, iter_nodes_at
from temporal_workflows.validation import Problem

if TYPE_CHECKING:
    from activities.executors.sessions import McpSessions

__all__ = ["Catalog", "CatalogError", "ExecutorRef", "load_catalog"]

log = logging.getLogger(__name__)
DISCOVERY_TIMEOUT_SECONDS = 10.0
# Server ids an unknown key's message lists at most.
SERVERS_NAMED = 10


@dataclass(frozen=True)
class ExecutorRef:
    kind: Literal["builtin", "mcp", "a2a"]
    key: str
    server_id: str | None = None
    tool_name: str | None = None
    agent_name: str | None = None


def load_catalog(
    path: Path | None, refresh_seconds: float = 60.0, environ: Mapping[str, str] | None = None
) -> Catalog:
    """The catalog named by a file (None: built-ins only), its `${VAR}`s resolved from
    `environ` (the entry point passes the process environment); CatalogError when bad."""
    if path is None:
        return Catalog(CatalogFile(), refresh_seconds=refresh_seconds, environ=environ)
    source = CatalogSource(path)  # before the read: a change made during it is seen later
    file = read_catalog_file(path, environ)
    return Catalog(file, refresh_seconds=refresh_seconds, environ=environ, source=source)


class Catalog:
    """Resolves executor keys and keeps the servers' tools and the agents' cards current."""

    def __init__(
        self,
        file: CatalogFile,
        refresh_seconds: float = 60.0,
        environ: Mapping[str, str] | None = None,
        source: CatalogSource | None = None,
    ) -> None:
        self.file = file
        self.refresh_seconds = refresh_seconds
        # The file `file` was read from, looked at on each refresh (it is not read again).
        self._source = source
        # A stdio server's environment is its entry's env plus this PATH, nothing else.
        self._search_path = (environ or {}).get("PATH", os.defpath)
        # What `redacted` masks: every credential the file gives a server or an agent.
        self._secrets = catalog_secrets(file, environ or {})
        self._sessions: McpSessions | None = None
        self._auth: Any = None  # what the sessions' HTTP requests carry (`use_auth`)
        self._server_specs = {s.id: s for s in file.servers}
        self._agent_specs = {a.name: a for a in file.agents}
        self._agent_endpoints = {a.name: a.endpoint for a in file.agents}
        self._servers = {s.id: _initial_server(s, file) for s in file.servers}
        self._agents = {
            a.name: AgentInfo(name=a.name, url=shown_url(file.written(a.url))) for a in file.agents
        }
        self._cards: dict[str, AgentCard] = {}
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.Task[None] | None = None
        self._asked: asyncio.Future[None] | None = None

    @property
    def sessions(self) -> McpSessions:
        """The servers' MCP sessions, made when first asked for. The MCP SDK takes about a
        second of CPU to import, so a process whose catalog names no MCP server (the
        default) never loads it and starts that much sooner (`bench.server_start`)."""
        if self._sessions is None:
            from activities.executors.sessions import McpSessions

            self._sessions = McpSessions(list(self.file.servers), search_path=self._search_path)
            self._sessions.use_auth(self._auth)
        return self._sessions

    def use_auth(self, auth: Any) -> None:
        """Give the MCP sessions' HTTP requests this `auth`, those made later too."""
        self._auth = auth
        if self._sessions is not None:
            self._sessions.use_auth(auth)

    async def close_sessions(self) -> None:
        """Close every MCP connection made (stdio servers exit); they reconnect if used."""
        if self._sessions is not None:
            await self._sessions.close()

    # --- resolution (save time and run time) ---

    def resolve(self, executor_key: str) -> ExecutorRef | None:
        """What a key names, or None when it is unknown or ambiguous."""
        found = self.resolution(executor_key)
        return found if isinstance(found, ExecutorRef) else None

    def resolution(self, key: str) -> ExecutorRef | str:
        """What a key names, or a message saying why it names nothing."""
        if key.startswith("builtin:"):
            if key in BUILTIN_KEYS:
                return ExecutorRef(kind="builtin", key=key)
            return f"{key!r} is not a built-in (known: {', '.join(sorted(BUILTIN_KEYS))})"
        server_id, slash, tool = key.partition("/")
        if slash and server_id in self._servers:
            if self._offers(server_id, tool):
                return ExecutorRef(kind="mcp", key=key, server_id=server_id, tool_name=tool)
            info = self._servers[server_id]
            if info.status == "down" and self._server_specs[server_id].tools is None:
                # Nothing is known of what it offers: say why, not that it offers nothing.
                return (
                    f"MCP server {server_id!r} is down, so its tool {tool!r} cannot be"
                    f" checked: {info.error}"
                )
            return f"MCP server {server_id!r} offers no tool {tool!r}"
        servers = [sid for sid in self._servers if self._offers(sid, key)]
        is_agent = key in self._agent_specs
        if len(servers) + int(is_agent) > 1:
            offered = [f"{sid}/{key}" for sid in servers] + (["the A2A agent"] if is_agent else [])
            return f"{key!r} is ambiguous; write one of: {', '.join(offered)}"
        if servers:
            return ExecutorRef(kind="mcp", key=key, server_id=servers[0], tool_name=key)
        if is_agent:
            return ExecutorRef(kind="a2a", key=key, agent_name=key)
        if slash:  # `server/tool` whose server is gone (a catalog changed since the save)
            return f"no MCP server {server_id!r} in the executor catalog ({self._servers_said()})"
        return f"{key!r} is not a built-in, an MCP tool or an A2A agent in the executor catalog"

    def _servers_said(self) -> str:
        ids = list(self._servers)
        if not ids:
            return "it has no MCP servers"
        more = f" and {len(ids) - SERVERS_NAMED} more" if len(ids) > SERVERS_NAMED else ""
        return f"its servers are {', '.join(map(repr, ids[:SERVERS_NAMED]))}{more}"

    def unlisted_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` but did not answer their last listing (down, or
        not asked yet) and declare no tools: what they offer now is unknown."""
        return [sid for sid in self.listing_servers(key) if self._servers[sid].status != "up"]

    def listing_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` from their listing (they declare no tools),
        whatever they answered last: what they offer now may have changed since."""
        if key.startswith(BUILTIN_PREFIX):
            return []
        server_id, slash, _ = key.partition("/")
        # A `server/tool` key concerns that server only: none when it is not in the catalog.
        ids = ([server_id] if server_id in self._servers else []) if slash else list(self._servers)
        return [sid for sid in ids if self._server_specs[sid].tools is None]

    async def current_resolution(self, key: str) -> ExecutorRef | str:
        """What a key names, asking the servers that could offer it again first when it
        names nothing.

        A server down when this process started (or at its last refresh) may be up now,
        and one up may offer a tool added since its last listing: a key naming either
        must not wait for the next refresh to be found.
        """
        found = self.resolution(key)
        if isinstance(found, str) and (listing := self.listing_servers(key)):
            await asyncio.gather(*(self._refresh_server(sid) for sid in listing))
            found = self.resolution(key)
        return found

    async def rediscover_for(self, spec: WorkflowSpec) -> None:
        """Before a save's check: ask the servers that could offer a key naming nothing
        again, so a server that came up, or a tool added, since the last refresh is not
        refused."""
        keys = [n.executor_key for _, n in iter_nodes_at(spec.nodes) if n.executor_key]
        listing = {
            sid
            for key in keys
            if isinstance(self.resolution(key), str)
            for sid in self.listing_servers(key)
        }
        await asyncio.gather(*(self._refresh_server(sid) for sid in sorted(listing)))

    def redacted(self, text: str) -> str:
        """An error message with each catalog URL in it as the routes show it (`${VAR}`
        unresolved, a password and query values masked), any other URL masked, and every
        credential of the catalog masked (`catalog_secrets`): an A2A or MCP client's errors
        may quote the URL they used, and a tool or an agent may quote its token."""
        urls = [s.url for s in self.file.servers if s.url] + [a.url for a in self.file.agents]
        said: dict[str, str] = {}
        for url in urls:
            shown = shown_url(self.file.written(url))
            said[url] = shown
            # The clients are given the URL without its user info (`endpoint.py`).
            said.setdefault(split_userinfo(url)[0], split_userinfo(shown)[0])
        for used in sorted(said, key=len, reverse=True):
            shown = said[used]
            text = text.replace(used, shown).replace(used.rstrip("/"), shown.rstrip("/"))
        return secrets_masked(urls_masked(text), self._secrets)

    def is_known_agent(self, name: str) -> bool:
        return name in self._agent_specs

    def unknown_executor_problems(self, spec: WorkflowSpec) -> list[Problem]:
        """One problem per step whose executorKey or a2aPool entry the catalog cannot
        resolve, naming the node by its path and name as the save-time rules do."""
        problems: list[Problem] = []
        for path, node in iter_nodes_at(spec.nodes):
            where = f"{path} ({node.name!r})"
            if node.executor_key is not None:
                found = self.resolution(node.executor_key)
                if isinstance(found, str):
                    problems.append(Problem(where, f"unknown executorKey: {found}"))
            unknown = [a for a in node.a2a_pool if not self.is_known_agent(a)]
            if unknown:
                problems.append(
                    Problem(
                        where,
                        f"unresolvable a2aPool agent(s) {', '.join(map(repr, unknown))}; "
                        "each entry must be an A2A agent in the executor catalog",
                    )
                )
        return problems

    def _offers(self, server_id: str, tool_name: str) -> bool:
        # Resolved on every step: a scan, not a set built per call (1.3% of the worker's CPU).
        return any(t.name == tool_name for t in self._servers[server_id].tools)

    # --- live state ---

    def tool_schema(self, server_id: str, tool_name: str) -> dict[str, object] | None:
        for tool in self._servers[server_id].tools:
            if tool.name == tool_name:
                return tool.input_schema
        return None

    def agent_endpoint(self, name: str) -> Endpoint:
        """Where the agent's card is asked for, and what requests to its origin carry."""
        return self._agent_endpoints[name]

    def agent(self, name: str) -> AgentInfo:
        return self._agents[name]

    def card(self, name: str) -> AgentCard | None:
        return self._cards.get(name)

    def remember_card(self, name: str, card: AgentCard) -> None:
        """Keep a card an executor fetched, so the pool picker and skill matching see it."""
        self._cards[name] = card
        self._agents[name] = _agent_info(self._agents[name], card)

    def servers(self) -> list[ServerInfo]:
        return list(self._servers.values())

    def agents(self) -> list[AgentInfo]:
        return list(self._agents.values())

    async def start(self) -> None:
        """Discover once now, then every `refresh_seconds` in the background."""
        await self.refresh()
        if self._loop is None:
            self._loop = asyncio.create_task(self._refresh_forever())

    async def refresh(self) -> None:
        """Ask every server for its tools and every agent for its card, concurrently;
        warn when the catalog file no longer says what this process loaded."""
        if self._source is not None:
            self._source.warn_if_changed()
        await asyncio.gather(
            *(self._refresh_server(sid) for sid in self._servers),
            *(self._refresh_agent(name) for name in self._agents),
        )

    async def refresh_on_demand(self) -> None:
        """refresh(), shared: a caller arriving while one is under way waits for it rather
        than asking every server and agent again (many clients, one round of requests)."""
        if self._asked is None or self._asked.done():
            self._asked = asyncio.ensure_future(self.refresh())
        await asyncio.shield(self._asked)

    async def close(self) -> None:
        """Stop refreshing and close every connection."""
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None
        await self.close_sessions()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_seconds)
            try:
                await self.refresh()
            except Exception:  # a refresh bug must not stop future refreshes
                log.exception("executor catalog refresh failed")

    async def _refresh_server(self, server_id: str) -> None:
        spec = self._server_specs[server_id]
        session = self.sessions.get(server_id)
        info = self._servers[server_id]
        now = datetime.now(UTC)
        try:
            async with asyncio.timeout(DISCOVERY_TIMEOUT_SECONDS):
                listed = await session.tools(refresh=True)
        except Exception as exc:
            await session.reset()
            error = self.redacted(describe_error(exc))
            if isinstance(exc, TimeoutError) and error == "TimeoutError":
                error = f"TimeoutError: no tool listing within {DISCOVERY_TIMEOUT_SECONDS:g} s"
            self._servers[server_id] = info.model_copy(
                update={"status": "down", "error": error, "checked_at": now}
            )
            return
        tools = [
            ToolInfo(name=t.name, description=t.description, input_schema=dict(t.input_schema))
            for t in listed.values()
            if spec.tools is None or t.name in spec.tools
        ]
        if spec.tools is not None:  # declared tools stay resolvable even if the server lost one
            seen = {t.name for t in tools}
            tools += [ToolInfo(name=n) for n in spec.tools if n not in seen]
        self._servers[server_id] = info.model_copy(
            update={"status": "up", "error": None, "tools": tools, "checked_at": now}
        )

    async def _refresh_agent(self, name: str) -> None:
        if self._http is None:
            # No connection kept between refreshes: an agent closes an idle one within
            # seconds, and a kept one sat half-closed (CLOSE-WAIT) for the whole interval.
            self._http = httpx.AsyncClient(
                timeout=DISCOVERY_TIMEOUT_SECONDS,
                verify=default_tls(),
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        now = datetime.now(UTC)
        try:
            endpoint = self.agent_endpoint(name)
            # Its own client, acting for nobody: the card's URL is the catalog's, and
            # redirects are not followed, so the catalog's headers go with the request.
            kwargs: dict[str, object] = {"headers": dict(endpoint.headers)}
            card = await fetch_card(self._http, endpoint.url, kwargs)
        except Exception as exc:
            error = self.redacted(describe_a2a_error(exc))
            self._agents[name] = self._agents[name].model_copy(
                update={"status": "down", "error": error, "checked_at": now}
            )
            return
        self._cards[name] = card
        self._agents[name] = _agent_info(self._agents[name], card).model_copy(
            update={"checked_at": now}
        )


def _initial_server(spec: McpServerSpec, file: CatalogFile) -> ServerInfo:
    return ServerInfo(
        id=spec.id,
        transport="streamable-http" if spec.url else "stdio",
        url=shown_url(file.written(spec.url)) if spec.url else None,
        command=file.written_command(spec),
        tools_source="static" if spec.tools is not None else "discovered",
        tools=[ToolInfo(name=n) for n in spec.tools or ()],
    )


def _agent_info(info: AgentInfo, card: AgentCard) -> AgentInfo:
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


def shown_url(url: str) -> str:
    """A URL as the catalog routes show it: a password and the query values written into
    it are masked (any may be a token), as `builtin:http` shows its URL."""
    return masked_url(url)
