"""End-to-end platform: the real API, worker and Temporal dev server, with the test peers' catalog.

Overrides the `platform` fixture of tests/conftest.py: the catalog names the real MCP
servers and A2A agents of `tests.peers`; catalog and registry are shared by the session
(one stdio spawn, one MCP handshake per server), each test gets a fresh store, task queue
and app.
"""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog, load_catalog
from activities.executors.registry import ExecutorRegistry
from app.logs import configure_logging
from tests.peers.catalog import Peers
from tests.support.platform import Platform, running_platform
from tests.support.service_tokens import SIGNER


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """The process's log lines (the API's and the worker's), as the entry points format them."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()
    configure_logging("DEBUG", "text", stream=buffer)
    yield buffer
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


@pytest.fixture(scope="session")
async def peer_catalog(peers: Peers) -> AsyncIterator[Catalog]:
    # No background refresh during tests: statuses stay those of the first discovery.
    catalog = load_catalog(peers.catalog_path, refresh_seconds=3600)
    await catalog.start()
    yield catalog
    await catalog.close()


@pytest.fixture(scope="session")
async def peer_registry(peer_catalog: Catalog) -> AsyncIterator[ExecutorRegistry]:
    registry = ExecutorRegistry(peer_catalog, service_tokens=SIGNER)
    yield registry
    await registry.close()


@pytest.fixture
async def platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peer_registry: ExecutorRegistry
) -> AsyncIterator[Platform]:
    async with running_platform(temporal_env.client, tmp_path, peer_registry) as platform:
        yield platform
