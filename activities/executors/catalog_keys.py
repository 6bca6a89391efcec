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

    def listing_servers(self, key: str) -> list[str]:
        """Servers that could offer `key` from their listing (they declare no tools),
        whatever they answered last: what they offer now may have changed since."""
        if key.startswith(BUILTIN_PREFIX):
            return []
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
