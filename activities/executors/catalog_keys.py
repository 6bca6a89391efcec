"""What an `executorKey` names in the catalog's live state: a built-in, an MCP tool or an
A2A agent (docs/executors.md, "How a key resolves"); read only, at save and at run time."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from activities.executors.base import BUILTIN_PREFIX
from activities.executors.builtin import BUILTIN_KEYS
from activities.executors.catalog_file import McpServerSpec
from activities.executors.catalog_models import ServerInfo
from temporal_workflows.definition import WorkflowSpec, iter_nodes_at
from temporal_workflows.validation import Problem

# Server ids an unknown key's message lists at most.
SERVERS_NAMED = 10
# The prefix of a key naming an A2A agent explicitly (`a2a:<agent>`), as `builtin:` names a
# built-in: a bare agent name is ambiguous as soon as a server offers a tool of that name.
AGENT_PREFIX = "a2a:"


@dataclass(frozen=True)
class ExecutorRef:
    kind: Literal["builtin", "mcp", "a2a"]
    key: str
    server_id: str | None = None
    tool_name: str | None = None
    agent_name: str | None = None


class CatalogKeys:
    """Resolves keys over the catalog's servers as last listed (`servers`, the catalog's
    own mapping, kept current by its refreshes), their specs and its agent names."""

    def __init__(
        self,
        servers: Mapping[str, ServerInfo],
        server_specs: Mapping[str, McpServerSpec],
        agents: Collection[str],
    ) -> None:
        self._servers = servers
        self._server_specs = server_specs
        self._agents = agents

    def resolution(self, key: str) -> ExecutorRef | str:
        """What a key names, or a message saying why it names nothing."""
        if key.startswith("builtin:"):
            if key in BUILTIN_KEYS:
                return ExecutorRef(kind="builtin", key=key)
            return f"{key!r} is not a built-in (known: {', '.join(sorted(BUILTIN_KEYS))})"
        if key.startswith(AGENT_PREFIX):
            agent = key.removeprefix(AGENT_PREFIX)
            if agent in self._agents:
                return ExecutorRef(kind="a2a", key=agent, agent_name=agent)
            return f"no A2A agent {agent!r} in the executor catalog ({self._agents_said()})"
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
        is_agent = key in self._agents
        if self.is_ambiguous(key):
            # Only keys that can be written: `a2a:<agent>` names the agent (it was "the A2A
            # agent", which no key could say).
            offered = [f"{sid}/{key}" for sid in servers] + [f"{AGENT_PREFIX}{key}"] * is_agent
            return f"{key!r} is ambiguous; write one of: {', '.join(offered)}"
        if servers:
            return ExecutorRef(kind="mcp", key=key, server_id=servers[0], tool_name=key)
        if is_agent:
            return ExecutorRef(kind="a2a", key=key, agent_name=key)
        if slash:  # `server/tool` whose server is gone (a catalog changed since the save)
            return f"no MCP server {server_id!r} in the executor catalog ({self._servers_said()})"
        return f"{key!r} is not a built-in, an MCP tool or an A2A agent in the executor catalog"

    def is_ambiguous(self, key: str) -> bool:
        """A bare key that more than one of the servers' tools and the agents answer to."""
        server_id, slash, _ = key.partition("/")
        if key.startswith((BUILTIN_PREFIX, AGENT_PREFIX)) or (slash and server_id in self._servers):
            return False  # it names one thing, or nothing
        named = sum(self._offers(sid, key) for sid in self._servers) + (key in self._agents)
        return named > 1

    def _servers_said(self) -> str:
        return _listed(list(self._servers), "servers", "it has no MCP servers")

    def _agents_said(self) -> str:
        return _listed(list(self._agents), "agents", "it has no A2A agents")

    def listing_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` from their listing (they declare no tools),
        whatever they answered last: what they offer now may have changed since."""
        if key.startswith((BUILTIN_PREFIX, AGENT_PREFIX)):
            return []  # no server offers it
        server_id, slash, _ = key.partition("/")
        # A `server/tool` key concerns that server only: none when it is not in the catalog.
        ids = ([server_id] if server_id in self._servers else []) if slash else list(self._servers)
        return [sid for sid in ids if self._server_specs[sid].tools is None]

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
            unknown = [a for a in node.a2a_pool if a not in self._agents]
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


def _listed(ids: list[str], what: str, none: str) -> str:
    """`its <what> are 'a', 'b'` (up to SERVERS_NAMED ids, then how many more), or `none`."""
    if not ids:
        return none
    more = f" and {len(ids) - SERVERS_NAMED} more" if len(ids) > SERVERS_NAMED else ""
    return f"its {what} are {', '.join(map(repr, ids[:SERVERS_NAMED]))}{more}"
