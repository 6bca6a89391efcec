"""The executor catalog file (`TRELLIS_EXECUTORS_FILE`): MCP servers and A2A agents, YAML or JSON.

```yaml
mcpServers:
  - id: onboarding-tools
    url: http://127.0.0.1:9001/mcp      # streamable HTTP endpoint
    tools: [mcp-email-validator]        # optional; otherwise discovered
  - id: local-tools
    command: [python, -m, my_tools]     # stdio server
a2aAgents:
  - name: account-manager-v1
    url: http://127.0.0.1:9101/         # card at /.well-known/agent-card.json
```
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_TOP_KEYS = {"mcpServers", "a2aAgents"}
_SERVER_KEYS = {"id", "url", "command", "tools", "env"}
_AGENT_KEYS = {"name", "url"}
# Server ids prefix tool names (`serverId/toolName`), so they must not contain a slash.
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class CatalogError(ValueError):
    """A catalog file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class McpServerSpec:
    id: str
    url: str | None = None
    command: tuple[str, ...] | None = None
    # Tools declared in the file; None means "whatever the server lists".
    tools: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def transport(self) -> str:
        return "streamable-http" if self.url else "stdio"


@dataclass(frozen=True)
class A2AAgentSpec:
    name: str
    url: str


@dataclass(frozen=True)
class CatalogFile:
    servers: tuple[McpServerSpec, ...] = ()
    agents: tuple[A2AAgentSpec, ...] = ()


def read_catalog_file(path: Path) -> CatalogFile:
    """Parse and check a catalog file; raise CatalogError naming the file and the problem."""

    def fail(problem: str) -> CatalogError:
        return CatalogError(f"executor catalog {path}: {problem}")

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise fail("file not found") from None
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise fail(f"invalid {kind}: {' '.join(str(exc).split())}") from None
    if data is None:
        return CatalogFile()
    try:
        return _parse(data)
    except ValueError as exc:
        raise fail(str(exc)) from None


def _parse(data: Any) -> CatalogFile:
    if not isinstance(data, dict):
        raise ValueError("the top level must be a mapping with mcpServers and/or a2aAgents")
    _no_unknown_keys(data, _TOP_KEYS, "the top level")
    servers = [_server(s, i) for i, s in enumerate(_list(data, "mcpServers"))]
    agents = [_agent(a, i) for i, a in enumerate(_list(data, "a2aAgents"))]
    _no_duplicates([s.id for s in servers], "mcpServers", "id")
    _no_duplicates([a.name for a in agents], "a2aAgents", "name")
    return CatalogFile(servers=tuple(servers), agents=tuple(agents))


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list")
    return value


def _no_unknown_keys(entry: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ValueError(
            f"{where} has unknown key(s) {', '.join(unknown)}"
            f" (allowed: {', '.join(sorted(allowed))})"
        )


def _no_duplicates(values: list[str], section: str, key: str) -> None:
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"{section} repeats the {key}(s) {', '.join(dupes)}")


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} needs a non-empty string {key}")
    return value.strip()


def _server(entry: Any, index: int) -> McpServerSpec:
    where = f"mcpServers[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a mapping")
    _no_unknown_keys(entry, _SERVER_KEYS, where)
    server_id = _text(entry, "id", where)
    where = f"{where} ({server_id})"
    if not _SERVER_ID.match(server_id):
        raise ValueError(f"{where}: id may hold letters, digits, '_', '.', '-' only")
    url, command = entry.get("url"), entry.get("command")
    if (url is None) == (command is None):
        raise ValueError(f"{where} needs exactly one of url (streamable HTTP) or command (stdio)")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        raise ValueError(f"{where}: url must be an http(s) URL")
    if command is not None:
        if isinstance(command, str):
            command = command.split()
        if not command or not all(isinstance(c, str) and c for c in command):
            raise ValueError(f"{where}: command must be a non-empty list of strings")
    tools = entry.get("tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)
    ):
        raise ValueError(f"{where}: tools must be a list of tool names")
    env = entry.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError(f"{where}: env must be a mapping")
    return McpServerSpec(
        id=server_id,
        url=url,
        command=tuple(command) if command else None,
        tools=tuple(tools) if tools is not None else None,
        env={str(k): str(v) for k, v in env.items()},
    )


def _agent(entry: Any, index: int) -> A2AAgentSpec:
    where = f"a2aAgents[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a mapping")
    _no_unknown_keys(entry, _AGENT_KEYS, where)
    name = _text(entry, "name", where)
    url = _text(entry, "url", f"{where} ({name})")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{where} ({name}): url must be an http(s) URL")
    return A2AAgentSpec(name=name, url=url)
