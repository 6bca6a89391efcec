"""A whole platform for a test: SQLite store, a worker on its own task queue, the API over HTTP.

`running_platform` assembles it around a Temporal client and an executor registry; the
`platform` fixture (tests/conftest.py) gives each test one with the built-ins only, and
tests/e2e overrides it with the test peers' catalog.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import TracerProvider
from temporalio.client import Client
from temporalio.worker import Worker

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.executors.tls import default_tls
from activities.metrics import RunMetrics
from activities.store.base import Store
from activities.store.factory import open_store
from activities.store.mongo import MongoStore
from app.main import create_app
from app.settings import Settings
from app.temporal import with_pydantic
from app.worker import build_worker
from tests.support.fake_mongo import forget, mongo_for_tests
from tests.support.http_peer import HttpPeer
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.server import serving_all

TERMINAL = {"completed", "failed", "cancelled"}


@dataclass
class Platform:
    api: httpx.AsyncClient
    store: Store
    client: Client
    task_queue: str
    worker: Worker
    peer_url: str
    peer: HttpPeer

    async def create(self, definition: dict[str, Any], enable: bool = True) -> str:
        definition = {"name": f"wf-{uuid.uuid4().hex[:8]}", **definition}
        response = await self.api.post("/api/v1/workflows", json=definition)
        assert response.status_code == 201, response.text
        workflow_id: str = response.json()["id"]
        if enable:
            toggled = await self.api.post(
                f"/api/v1/workflows/{workflow_id}/toggle", json={"enabled": True}
            )
            assert toggled.status_code == 200, toggled.text
        return workflow_id

    async def trigger(
        self, workflow_id: str, initial_input: dict[str, Any] | None = None, **body: Any
    ) -> str:
        response = await self.api.post(
            f"/api/v1/workflows/{workflow_id}/runs",
            json={"initialInput": initial_input or {}, **body},
        )
        assert response.status_code == 202, response.text
        run_id: str = response.json()["runId"]
        return run_id

    async def wait(
        self, workflow_id: str, run_id: str, statuses: set[str] = TERMINAL, within: float = 20.0
    ) -> dict[str, Any]:
        """Poll the run detail until its status is one of `statuses`."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            response = await self.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
            assert response.status_code == 200, response.text
            run: dict[str, Any] = response.json()
            if run["status"] in statuses:
                return run
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"run stuck in {run['status']}: {run}")
            await asyncio.sleep(0.05)

    async def run(
        self, definition: dict[str, Any], initial_input: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        workflow_id = await self.create(definition)
        run_id = await self.trigger(workflow_id, initial_input)
        return await self.wait(workflow_id, run_id)


@asynccontextmanager
async def running_platform(
    temporal: Client,
    data_dir: Path,
    registry: ExecutorRegistry,
    task_queue: str | None = None,
    *,
    settings_extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    run_metrics: RunMetrics | None = None,
    tracer_provider: TracerProvider | None = None,
    store: Store | None = None,
) -> AsyncIterator[Platform]:
    """Store files in `data_dir`, a worker on `task_queue` (a fresh one by default), the API.

    `run_metrics`: what the worker counts with (a private registry by default);
    `tracer_provider`: the API traces its requests into it (the client brings Temporal's);
    `store`: an unconnected store to run on instead of SQLite in `data_dir`.
    """
    store = store or _store_for_tests(data_dir)
    await store.connect()
    task_queue = task_queue or f"tq-{uuid.uuid4()}"
    settings = Settings(data_dir=data_dir, task_queue=task_queue, **(settings_extra or {}))
    client = with_pydantic(temporal, store, settings)
    peer = HttpPeer()
    worker = build_worker(
        client, task_queue=task_queue, store=store, executor=registry, metrics=run_metrics
    )
    app = create_app(
        settings,
        store=store,
        temporal=client,
        catalog=registry.catalog,
        tracer_provider=tracer_provider,
    )
    try:
        async with (
            shut_down_within(worker),
            serving_all(peer.app, app) as (peer_url, url),
            # One TLS context for the process: httpx would load the CA bundle again (~30 ms).
            httpx.AsyncClient(
                base_url=url, timeout=10, headers=headers, verify=default_tls()
            ) as api,
        ):
            yield Platform(api, store, client, task_queue, worker, peer_url, peer)
    finally:
        await store.close()
        if isinstance(store, MongoStore):
            forget(store.url)  # a fake MongoDB's data (nothing, for a real server)


# This worker gives in-flight activities no grace: its shutdown takes a second or two.
WORKER_SHUTDOWN_SECONDS = 60


@asynccontextmanager
async def shut_down_within(worker: Worker) -> AsyncIterator[Worker]:
    """`async with worker`, its shutdown bounded: a workflow task the SDK interrupted as
    deadlocked (over 2 s of CPU, on a machine loaded far past its cores) leaves a workflow
    it cannot evict, and its shutdown then waits for ever. A suite hung so, in the
    teardown of a failed test, which pytest-timeout no longer times; this fails instead."""
    await worker.__aenter__()
    try:
        yield worker
    finally:
        try:
            async with asyncio.timeout(WORKER_SHUTDOWN_SECONDS):
                await worker.__aexit__(None, None, None)
        except TimeoutError:
            raise AssertionError(
                f"the worker did not shut down within {WORKER_SHUTDOWN_SECONDS} s (a workflow "
                "it could not evict: its log says so)"
            ) from None


def _store_for_tests(data_dir: Path) -> Store:
    """SQLite in `data_dir`; with TRELLIS_TEST_PLATFORM_STORE=mongodb, the MongoDB store on
    TRELLIS_TEST_MONGODB_URL, or on the named fake MongoDB when that is unset (a way to run
    the platform tests on the store docker-compose uses; CI runs them on SQLite)."""
    if os.environ.get("TRELLIS_TEST_PLATFORM_STORE") != "mongodb":
        return open_store(f"sqlite:///{data_dir / 'trellis.db'}")
    url, options = mongo_for_tests()
    return MongoStore(url, database=f"trellis_test_{uuid.uuid4().hex[:12]}", **options)


@asynccontextmanager
async def executor_registry(
    catalog_path: Path | None = None, **options: Any
) -> AsyncIterator[ExecutorRegistry]:
    """A started catalog (built-ins only without a path) and an executor registry on it that
    may call loopback peers; both closed afterwards. `options` go to the registry."""
    catalog = load_catalog(catalog_path, refresh_seconds=3600)
    await catalog.start()
    registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED, **options)
    try:
        yield registry
    finally:
        await registry.close()
        await catalog.close()
