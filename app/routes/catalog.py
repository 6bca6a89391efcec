"""The executor catalog as the builder's pool picker sees it: MCP servers and A2A agents."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from activities.executors.catalog_models import AgentInfo, ServerInfo
from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import CatalogDep
from app.openapi import API_PREFIX

router = APIRouter(prefix=API_PREFIX, tags=["catalog"])

# On demand: every server and agent is asked again before the answer (shared by callers
# at once); otherwise the answer is the last refresh's (TRELLIS_CATALOG_REFRESH_SECONDS).
Refresh = Annotated[
    bool,
    Query(description="ask every MCP server and A2A agent again before answering"),
]


@router.get("/servers", response_model=list[ServerInfo], dependencies=[needs(READ)])
async def list_servers(catalog: CatalogDep, refresh: Refresh = False) -> list[ServerInfo]:
    """MCP servers: id, transport, status, tools with their input schemas."""
    if refresh:
        await catalog.refresh_on_demand()
    return catalog.servers()


@router.get("/agents", response_model=list[AgentInfo], dependencies=[needs(READ)])
async def list_agents(catalog: CatalogDep, refresh: Refresh = False) -> list[AgentInfo]:
    """A2A agents: name, card summary, skills, status."""
    if refresh:
        await catalog.refresh_on_demand()
    return catalog.agents()
