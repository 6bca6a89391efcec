"""The executor catalog as the builder's pool picker sees it: MCP servers and A2A agents."""

from __future__ import annotations

from fastapi import APIRouter, Request

from activities.executors.catalog import Catalog
from activities.executors.catalog_models import AgentInfo, ServerInfo

router = APIRouter(tags=["catalog"])


def _catalog(request: Request) -> Catalog:
    catalog: Catalog = request.app.state.catalog
    return catalog


@router.get("/servers", response_model=list[ServerInfo])
async def list_servers(request: Request) -> list[ServerInfo]:
    """MCP servers: id, transport, status, tools with their input schemas."""
    return _catalog(request).servers()


@router.get("/agents", response_model=list[AgentInfo])
async def list_agents(request: Request) -> list[AgentInfo]:
    """A2A agents: name, card summary, skills, status."""
    return _catalog(request).agents()
