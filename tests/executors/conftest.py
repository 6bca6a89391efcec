"""Executor tests run against the real peers: one catalog and registry for the session."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from activities.executors.base import StepCall
from activities.executors.catalog import Catalog, load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.peers.catalog import Peers
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.service_tokens import SIGNER

_ids = itertools.count(1)


@pytest.fixture(scope="session")
async def catalog(peers: Peers) -> AsyncIterator[Catalog]:
    catalog = load_catalog(peers.catalog_path, refresh_seconds=3600)
    await catalog.start()
    yield catalog
    await catalog.close()


@pytest.fixture(scope="session")
async def registry(catalog: Catalog) -> AsyncIterator[ExecutorRegistry]:
    registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED, service_tokens=SIGNER)
    yield registry
    await registry.close()


MakeCall = Callable[..., StepCall]


@pytest.fixture
def make_call() -> MakeCall:
    """A StepCall with fresh ids; keyword arguments override any field."""

    def make(key: str | None = None, config: dict[str, Any] | None = None, **kw: Any) -> StepCall:
        n = next(_ids)
        fields: dict[str, Any] = {
            "run_id": f"run-{n}",
            "workflow_id": "wf-1",
            "node_id": f"node-{n}",
            "node_name": f"Step {n}",
            "node_run_id": f"node-run-{n}",
            "executor_key": key,
            "a2a_pool": [],
            "config": config or {},
            "context": {"input": {"customerName": "Ada"}},
        }
        fields.update(kw)
        return StepCall(**fields)

    return make
