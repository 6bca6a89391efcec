"""The real API over HTTP: SQLite store in tmp_path, a YAML catalog, the session Temporal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog, load_catalog
from activities.executors.tls import default_tls
from activities.store.base import Store
from activities.store.factory import open_store
from app.main import create_app
from app.settings import Settings
from app.temporal import with_pydantic
from tests.support.server import free_port, serving

# Every executor key and agent the contract's examples use. Tools are listed statically,
# so no MCP server has to run; agents point at a closed port (saving never calls them).
TEST_CATALOG = """
mcpServers:
  - id: onboarding-tools
    url: http://127.0.0.1:{dead}/mcp
    tools: [mcp-email-validator, mcp-email-sender, mcp-slack-notifier, mcp-phone-verifier,
            mcp-crm-integration, mcp-enterprise-provisioner, mcp-standard-provisioner,
            data-validator, email-sender, shared-tool]
  - id: tree-tools
    url: http://127.0.0.1:{dead}/mcp
    tools: [tool-a, tool-c, tool-d, tool-e, tool-f, tool-g, tool-h, shared-tool]
a2aAgents:
  - {{name: account-manager-v1, url: "http://127.0.0.1:{dead}/"}}
  - {{name: account-manager-v2, url: "http://127.0.0.1:{dead}/"}}
  - {{name: account-manager-fallback, url: "http://127.0.0.1:{dead}/"}}
  - {{name: account-creator-v1, url: "http://127.0.0.1:{dead}/"}}
  - {{name: account-creator-v2, url: "http://127.0.0.1:{dead}/"}}
  - {{name: a2a-account-manager, url: "http://127.0.0.1:{dead}/"}}
  - {{name: a2a-standard-onboarding-agent, url: "http://127.0.0.1:{dead}/"}}
  - {{name: a2a-business-onboarding-agent, url: "http://127.0.0.1:{dead}/"}}
  - {{name: hackernews-agent, url: "http://127.0.0.1:{dead}/"}}
  - {{name: analysis-agent, url: "http://127.0.0.1:{dead}/"}}
  - {{name: web-agent, url: "http://127.0.0.1:{dead}/"}}
"""


@pytest.fixture(scope="session")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    path = tmp_path_factory.mktemp("catalog") / "executors.yaml"
    path.write_text(TEST_CATALOG.format(dead=free_port()), encoding="utf-8")
    # Not started: resolving keys at save time needs only the file.
    return load_catalog(path)


def make_settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, max_body_bytes=64_000)


@asynccontextmanager
async def connected_store(settings: Settings) -> AsyncIterator[Store]:
    opened = open_store(settings.resolved_store_url)
    await opened.connect()
    try:
        yield opened
    finally:
        await opened.close()


@asynccontextmanager
async def api_client(
    settings: Settings, store: Store, catalog: Catalog, temporal: Client
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, served over HTTP on a free port, and a client for it."""
    # The product's payloads (its clients all speak Pydantic), not the fixture client's.
    app = create_app(
        settings, store=store, temporal=with_pydantic(temporal, store, settings), catalog=catalog
    )
    async with (
        serving(app) as base_url,
        httpx.AsyncClient(base_url=base_url, verify=default_tls()) as http,
    ):
        yield http


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    async with connected_store(settings) as opened:
        yield opened


@pytest.fixture
async def client(
    settings: Settings, store: Store, catalog: Catalog, temporal_env: WorkflowEnvironment
) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(settings, store, catalog, temporal_env.client) as http:
        yield http


@pytest.fixture(scope="module")
async def shared_client(
    tmp_path_factory: pytest.TempPathFactory, catalog: Catalog, temporal_env: WorkflowEnvironment
) -> AsyncIterator[httpx.AsyncClient]:
    """One app for a whole module, for tests that only need "nothing was stored" deltas."""
    settings = make_settings(tmp_path_factory.mktemp("shared"))
    async with connected_store(settings) as opened:
        async with api_client(settings, opened, catalog, temporal_env.client) as http:
            yield http


@pytest.fixture
def create(client: httpx.AsyncClient) -> Callable[..., Any]:
    """POST a definition and return the created workflow (asserting 201)."""

    async def _create(body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post("/api/v1/workflows", json=body)
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    return _create
