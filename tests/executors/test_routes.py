"""GET /api/v1/servers and /api/v1/agents over HTTP, from the live catalog."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from activities.executors.catalog import Catalog
from app.auth.guard import Authenticator
from app.routes.catalog import router
from tests.peers.serving import ServedApp


@pytest.fixture(scope="module")
async def api(catalog: Catalog) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.state.catalog = catalog
    app.state.authenticator = Authenticator(None)  # dev mode: the routes' scope checks pass
    app.include_router(router)  # its paths carry /api/v1
    served = ServedApp(app).start()
    async with httpx.AsyncClient(base_url=served.base_url) as client:
        yield client
    served.stop()


async def test_servers_lists_transport_status_and_tool_schemas(api: httpx.AsyncClient) -> None:
    response = await api.get("/api/v1/servers")
    assert response.status_code == 200
    servers = {s["id"]: s for s in response.json()}
    assert servers["peer-http"]["transport"] == "streamable-http"
    assert servers["peer-stdio"]["transport"] == "stdio"
    add = next(t for t in servers["peer-http"]["tools"] if t["name"] == "add")
    assert add["inputSchema"]["required"] == ["a", "b"]
    assert servers["peer-http"]["status"] == "up"


async def test_agents_lists_cards_skills_and_status(api: httpx.AsyncClient) -> None:
    response = await api.get("/api/v1/agents")
    assert response.status_code == 200
    agents = {a["name"]: a for a in response.json()}
    assert agents["account-manager-v2"]["skills"][0]["id"] == "premium-accounts"
    assert agents["account-manager-v2"]["status"] == "up"
    assert agents["dead-agent"]["status"] == "down"
