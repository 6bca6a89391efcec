"""The executor catalog as the builder's pool picker sees it: MCP servers and A2A agents."""

from __future__ import annotations

from fastapi import APIRouter

from activities.executors.catalog_models import AgentInfo, ServerInfo
from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import CatalogDep

router = APIRouter(tags=["catalog"])


@router.get("/servers", response_model=list[ServerInfo], dependencies=[needs(READ)])
async def list_servers(catalog: CatalogDep) -> list[ServerInfo]:
    """MCP servers: id, transport, status, tools with their input schemas."""
    return catalog.servers()


@router.get("/agents", response_model=list[AgentInfo], dependencies=[needs(READ)])
async def list_agents(catalog: CatalogDep) -> list[AgentInfo]:
    """A2A agents: name, card summary, skills, status."""
    return catalog.agents()
