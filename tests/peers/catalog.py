"""Start every test peer and write an executor catalog naming them.

```python
from tests.peers.catalog import running_peers

async with running_peers(tmp_path) as peers:
    catalog = load_catalog(peers.catalog_path)
```

or, in a conftest, `from tests.peers.fixtures import peers` (session-scoped fixture).

The catalog lists:
- MCP server `peer-http` (streamable HTTP, every tool of `tests.peers.mcp_server`:
  echo, add, flaky, broken, sleepy and the contract's tool names, which echo their
  arguments) and `peer-stdio` (the same server over stdio, tools `echo`, `add`,
  `environment` declared statically: write `peer-stdio/echo`, since `echo` alone is
  offered twice);
- A2A agents: the contract's names (echo agents with different skills),
  `failing-agent`, `slow-agent`, `input-agent`, `rejecting-agent`, `quiet-agent`
(completes without an artifact), `lingering-agent`
  (keeps each stream open 5 s after its task ended), `late-ending-agent` (0.2 s),
  `signed-agent` (its URL carries a query, `?sig=…`, that every request must carry), and
  `dead-agent` (a URL where nothing listens, for failover).
`peers.mcp_stats` and `peers.agent_stats` count what the peers saw; `peers.mcp_requests`
and `peers.agent_requests` keep every HTTP request's headers. The catalog gives `peer-http`
and every agent an `X-Api-Key` header (`PEER_API_KEY`) and `peer-stdio` one env variable,
`PEER_MODE` (its `environment` tool shows what the process got).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.mcp_server import McpStats, build_mcp_server
from tests.peers.recording import RequestLog
from tests.peers.serving import ServedApp, free_port

# The signature in `signed-agent`'s URL.
SIGNED_AGENT_SIG = "peer-sig-5c1e"


def _agent(name: str, skill: str, description: str, *tags: str, **kw: Any) -> AgentSpec:
    return AgentSpec(name, skills=((skill, description, tags),), **kw)


_ONBOARD = ("onboard", "Onboards new customers and sets up their accounts", "onboarding")
AGENTS = [
    _agent(
        "account-manager-v1",
        "standard-accounts",
        "Creates standard accounts",
        "accounts",
        "standard",
    ),
    _agent(
        "account-manager-v2",
        "premium-accounts",
        "Creates premium accounts with SSO",
        "accounts",
        "premium",
        "sso",
    ),
    _agent("account-manager-fallback", "any-account", "Creates any account", "accounts"),
    _agent("a2a-account-manager", "premium-accounts", "Premium accounts", "accounts", "premium"),
    _agent("a2a-standard-onboarding-agent", *_ONBOARD),
    _agent("a2a-business-onboarding-agent", *_ONBOARD),
    _agent("hackernews-agent", "hn-research", "Researches Hacker News stories", "research"),
    _agent("analysis-agent", "deep-analysis", "Analyses research findings", "analysis"),
    _agent("web-agent", "web-research", "Researches the web", "research", "web"),
    _agent("account-creator-v1", "create-account", "Creates accounts", "accounts"),
    # Without streaming, so the executor polls this one.
    _agent("account-creator-v2", "create-account", "Creates accounts", "accounts", streaming=False),
    AgentSpec("failing-agent", kind="fail"),
    AgentSpec("slow-agent", kind="slow"),
    AgentSpec("input-agent", kind="input"),
    AgentSpec("rejecting-agent", kind="reject"),
    AgentSpec("quiet-agent", kind="bare"),
    # Keeps each stream open 5 s past the task's end.
    AgentSpec("lingering-agent", linger_seconds=5.0),
    # Ends each stream 0.2 s after the task's end (a server busy with other work).
    AgentSpec("late-ending-agent", linger_seconds=0.2),
    # Answers only requests carrying its URL's query (a signed URL), its card's included.
    AgentSpec("signed-agent", query=f"sig={SIGNED_AGENT_SIG}"),
]


# What the catalog sends as each HTTP peer's X-Api-Key (a catalog header, not a token).
PEER_API_KEY = "peer-api-key-7f3a"


@dataclass
class Peers:
    catalog_path: Path
    mcp_url: str
    agents_base_url: str
    dead_agent_url: str
    mcp_stats: McpStats
    agent_stats: AgentStats
    mcp_app: ServedApp
    agents_app: ServedApp
    mcp_requests: RequestLog
    agent_requests: RequestLog

    def agent_url(self, name: str) -> str:
        query = next((a.query for a in AGENTS if a.name == name and a.query), "")
        if query:  # written the way a signed URL is: no slash before its query
            return f"{self.agents_base_url}/agents/{name}?{query}"
        return f"{self.agents_base_url}/agents/{name}/"


def write_catalog(path: Path, peers: Peers) -> Path:
    """Write the catalog YAML naming every peer to `path`."""
    data = {
        "mcpServers": [
            {"id": "peer-http", "url": peers.mcp_url, "headers": {"X-Api-Key": PEER_API_KEY}},
            {
                "id": "peer-stdio",
                "command": [sys.executable, "-m", "tests.peers.mcp_server", "--stdio"],
                "tools": ["echo", "add", "environment"],
                "env": {"PEER_MODE": "isolated"},
            },
        ],
        "a2aAgents": [
            {"name": a.name, "url": peers.agent_url(a.name), "headers": {"X-Api-Key": PEER_API_KEY}}
            for a in AGENTS
        ]
        + [{"name": "dead-agent", "url": peers.dead_agent_url}],
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def running_peers(directory: Path | None = None) -> AsyncIterator[Peers]:
    """Serve the MCP server and the agents; yield where they are and the catalog file."""
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        mcp_stats, agent_stats = McpStats(), AgentStats()
        mcp_requests = RequestLog(build_mcp_server(mcp_stats).streamable_http_app())
        mcp = ServedApp(mcp_requests).start()
        stack.callback(mcp.stop)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        agent_requests = RequestLog(agents_app(AGENTS, base, agent_stats))
        agents = ServedApp(agent_requests, port=port).start()
        stack.callback(agents.stop)
        peers = Peers(
            catalog_path=directory / "executors.yaml",
            mcp_url=f"{mcp.base_url}/mcp",
            agents_base_url=base,
            dead_agent_url=f"http://127.0.0.1:{free_port()}/",
            mcp_stats=mcp_stats,
            agent_stats=agent_stats,
            mcp_app=mcp,
            agents_app=agents,
            mcp_requests=mcp_requests,
            agent_requests=agent_requests,
        )
        write_catalog(peers.catalog_path, peers)
        yield peers
