"""End-to-end platform: the real API, worker and Temporal dev server, with the test peers' catalog.

Like `tests/engine/conftest.py`, but the catalog names the real MCP servers and A2A
agents of `tests.peers`; catalog and registry are shared by the session (one stdio
spawn, one MCP handshake per server), each test gets a fresh store, task queue and app.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from activities.executors.catalog import Catalog, load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.store.factory import open_store
from app.main import create_app
from app.settings import Settings
from app.temporal import with_pydantic
from app.worker import build_worker
from tests.engine.conftest import Platform
from tests.peers.catalog import Peers
from tests.support.http_peer import HttpPeer
from tests.support.server import serving


@pytest.fixture(scope="session")
async def peer_catalog(peers: Peers) -> AsyncIterator[Catalog]:
    # No background refresh during tests: statuses stay those of the first discovery.
    catalog = load_catalog(peers.catalog_path, refresh_seconds=3600)
    await catalog.start()
    yield catalog
    await catalog.close()


@pytest.fixture(scope="session")
async def peer_registry(peer_catalog: Catalog) -> AsyncIterator[ExecutorRegistry]:
    registry = ExecutorRegistry(peer_catalog)
    yield registry
    await registry.close()


@pytest.fixture
async def platform(
    temporal_env: Any, tmp_path: Path, peer_catalog: Catalog, peer_registry: ExecutorRegistry
) -> AsyncIterator[Platform]:
    client = with_pydantic(temporal_env.client)
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    task_queue = f"tq-{uuid.uuid4()}"
    settings = Settings(data_dir=tmp_path, task_queue=task_queue)
    http_peer = HttpPeer()
    worker = build_worker(client, task_queue=task_queue, store=store, executor=peer_registry)
    app = create_app(settings, store=store, temporal=client, catalog=peer_catalog)
    try:
        async with (
            worker,
            serving(http_peer.app) as http_peer_url,
            serving(app) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as api,
        ):
            yield Platform(api, store, client, task_queue, worker, http_peer_url, http_peer)
    finally:
        await store.close()
