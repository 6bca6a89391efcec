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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from a2a.types.a2a_pb2 import AgentCard

from activities.executors.catalog_discovery import (
    agent_info,
    discovery_client,
    fetched_card,
    initial_server,
    listed_server,
    shown_url,
)
from activities.executors.catalog_file import CatalogError, CatalogFile, read_catalog_file
from activities.executors.catalog_keys import CatalogKeys, ExecutorRef
from activities.executors.catalog_models import AgentInfo, ServerInfo
from activities.executors.catalog_secrets import catalog_secrets, logged_secrets, secrets_masked
from activities.executors.catalog_source import CatalogSource
from activities.executors.endpoint import Endpoint, split_userinfo
from activities.executors.url_mask import urls_masked
from activities.known_secrets import remember_secrets
from activities.secret_text import scrub_secrets
from temporal_workflows.definition import WorkflowSpec, iter_nodes_at
from temporal_workflows.validation import Problem

if TYPE_CHECKING:
    from activities.executors.sessions import McpSessions

__all__ = ["Catalog", "CatalogError", "ExecutorRef", "load_catalog", "shown_url"]

log = logging.getLogger(__name__)
# Read at each refresh (a test shortens it).
DISCOVERY_TIMEOUT_SECONDS = 10.0


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
        # And every log line and span masks them, whoever wrote it (the MCP SDK's error
        # quoting a stdio server's stdout, a traceback).
        remember_secrets(self, logged_secrets(file, environ or {}))
        self._sessions: McpSessions | None = None
        self._auth: Any = None  # what the sessions' HTTP requests carry (`use_auth`)
        self._server_specs = {s.id: s for s in file.servers}
        self._agent_specs = {a.name: a for a in file.agents}
        self._agent_endpoints = {a.name: a.endpoint for a in file.agents}
        self._servers = {s.id: initial_server(s, file) for s in file.servers}
        self._agents = {
            a.name: AgentInfo(name=a.name, url=shown_url(file.written(a.url))) for a in file.agents
        }
        self._cards: dict[str, AgentCard] = {}
        # Reads `_servers` as the refreshes replace its entries.
        self._keys = CatalogKeys(self._servers, self._server_specs, self._agent_specs)
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
        return self._keys.resolution(key)

    def is_ambiguous(self, key: str) -> bool:
        """A bare key that several tools, or a tool and an agent, answer to."""
        return self._keys.is_ambiguous(key)

    def unlisted_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` but did not answer their last listing (down, or
        not asked yet) and declare no tools: what they offer now is unknown."""
        return [sid for sid in self.listing_servers(key) if self._servers[sid].status != "up"]

    def listing_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` from their listing (they declare no tools),
        whatever they answered last: what they offer now may have changed since."""
        return self._keys.listing_servers(key)

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
        unresolved, a password and query values masked), any other URL masked, every
        credential of the catalog masked (`catalog_secrets`), then what the logs mask
        (`scrub_secrets`: `Bearer …`, a JWT, `token=…`): an A2A or MCP client's errors
        may quote the URL they used, and a tool or an agent may quote its token or the
        caller's service token. Every text a tool, an agent or their clients wrote passes
        here before an error, a heartbeat or `/servers` and `/agents` keep it."""
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
        # The catalog's values first: one holding a space would be cut by the logs' masks
        # (`password: ***` then the rest of it).
        return scrub_secrets(secrets_masked(urls_masked(text), self._secrets))

    def is_known_agent(self, name: str) -> bool:
        return name in self._agent_specs

    def unknown_executor_problems(self, spec: WorkflowSpec) -> list[Problem]:
        """One problem per step whose executorKey or a2aPool entry the catalog cannot
        resolve, naming the node by its path and name as the save-time rules do."""
        return self._keys.unknown_executor_problems(spec)

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
        self._agents[name] = agent_info(self._agents[name], card)

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
        session = self.sessions.get(server_id)
        self._servers[server_id] = await listed_server(
            self._servers[server_id],
            self._server_specs[server_id],
            session,
            DISCOVERY_TIMEOUT_SECONDS,
            self.redacted,
        )

    async def _refresh_agent(self, name: str) -> None:
        if self._http is None:
            self._http = discovery_client(DISCOVERY_TIMEOUT_SECONDS)
        now = datetime.now(UTC)
        found = await fetched_card(self.agent_endpoint(name), self._http, self.redacted)
        if isinstance(found, str):
            self._agents[name] = self._agents[name].model_copy(
                update={"status": "down", "error": found, "checked_at": now}
            )
            return
        self._cards[name] = found
        self._agents[name] = agent_info(self._agents[name], found).model_copy(
            update={"checked_at": now}
        )
