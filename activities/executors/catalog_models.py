"""What the live catalog reports about MCP servers and A2A agents (the builder's pool picker)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from temporal_workflows.base import CamelModel

# "unknown" until the first discovery finished; "down" keeps the last error and is retried.
Status = Literal["unknown", "up", "down"]


class ToolInfo(CamelModel):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class ServerInfo(CamelModel):
    id: str
    transport: Literal["streamable-http", "stdio"]
    url: str | None = None
    command: list[str] | None = None
    status: Status = "unknown"
    error: str | None = None
    # Declared in the file (static) or discovered from `tools/list`.
    tools_source: Literal["static", "discovered"] = "discovered"
    tools: list[ToolInfo] = Field(default_factory=list)
    checked_at: datetime | None = None


class SkillInfo(CamelModel):
    id: str
    name: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class AgentInfo(CamelModel):
    name: str
    url: str
    status: Status = "unknown"
    error: str | None = None
    # From the agent card, once fetched.
    card_name: str | None = None
    description: str | None = None
    version: str | None = None
    streaming: bool | None = None
    skills: list[SkillInfo] = Field(default_factory=list)
    checked_at: datetime | None = None
