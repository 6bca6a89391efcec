"""The whole platform in one process, as the engine tests assemble it, plus the baselines.

One tuned dev server; one store (SQLite file); our worker (`build_worker`) on one task
queue and the hand-written workflows' worker on another, both in this process; the API
served by uvicorn and driven over HTTP; an MCP echo server in a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import CatalogFile, McpServerSpec
from activities.executors.registry import ExecutorRegistry
from activities.store.base import Store
from activities.store.factory import open_store
from app.devserver_flags import TUNING_ARGS
from app.main import create_app
from app.settings import Settings
from app.temporal import with_pydantic
from app.worker import build_worker
from bench import handwritten
from temporal_workflows import search_attributes
from tests.conftest import temporal_binary
from tests.support.server import free_port, serving

MCP_SERVER_ID = "bench-mcp"


@dataclass
class BenchPlatform:
    api: httpx.AsyncClient
    client: Client
    store: Store
    registry: ExecutorRegistry
    task_queue: str
    hand_queue: str
    # Trigger POST -> 202 of every run_ours call: the API's share of the latency.
    post_ms: list[float] = field(default_factory=list)

    async def create(self, definition: dict[str, Any]) -> str:
        """Save and enable a definition through the API; return its id."""
        body = {"name": f"bench-{uuid.uuid4().hex[:8]}", **definition}
        created = await self.api.post("/api/v1/workflows", json=body)
        created.raise_for_status()
        workflow_id: str = created.json()["id"]
        toggled = await self.api.post(
            f"/api/v1/workflows/{workflow_id}/toggle", json={"enabled": True}
        )
        toggled.raise_for_status()
        return workflow_id

    async def run_ours(self, workflow_id: str) -> tuple[float, str]:
        """Trigger over HTTP and wait for the end; return (ms, run id).

        The interpreter writes `completed` to the store before its workflow returns, so
        the handle's result marks the moment the run is completed in the read model.
        """
        started = time.perf_counter()
        response = await self.api.post(
            f"/api/v1/workflows/{workflow_id}/runs", json={"initialInput": {"n": 1}}
        )
        response.raise_for_status()
        self.post_ms.append((time.perf_counter() - started) * 1000)
        run_id: str = response.json()["runId"]
        await self.client.get_workflow_handle(run_id).result()
        return (time.perf_counter() - started) * 1000, run_id

    async def confirm(self, workflow_id: str, run_id: str) -> None:
        """Fail loudly unless the API shows the run completed (not timed)."""
        detail = await self.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
        detail.raise_for_status()
        status = detail.json()["status"]
        if status != "completed":
            raise RuntimeError(f"run {run_id} is {status}, not completed")

    async def run_hand(self, workflow: str, inp: handwritten.BatchInput) -> tuple[float, str]:
        """Start a hand-written workflow with the client and wait for its result."""
        started = time.perf_counter()
        handle = await self.client.start_workflow(
            workflow, inp, id=f"hand-{uuid.uuid4()}", task_queue=self.hand_queue
        )
        await handle.result()
        return (time.perf_counter() - started) * 1000, handle.id


@contextlib.asynccontextmanager
async def bench_platform(data_dir: Path) -> AsyncIterator[BenchPlatform]:
    """Start every part; stop them all when the block exits."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
    )
    mcp_port = free_port()
    mcp = _start_mcp_server(mcp_port)
    store = open_store(f"sqlite:///{data_dir / 'bench.db'}")
    spec = McpServerSpec(id=MCP_SERVER_ID, url=f"http://127.0.0.1:{mcp_port}/mcp", tools=("echo",))
    catalog = Catalog(CatalogFile(servers=(spec,)))
    registry = ExecutorRegistry(catalog)
    try:
        await _wait_for_port(mcp_port, mcp)
        await store.connect()
        await catalog.start()
        client = with_pydantic(env.client)
        task_queue, hand_queue = f"bench-{uuid.uuid4()}", f"bench-hand-{uuid.uuid4()}"
        settings = Settings(data_dir=data_dir, task_queue=task_queue)
        ours = build_worker(client, task_queue=task_queue, store=store, executor=registry)
        # Same concurrency limits as build_worker, so neither side gets more slots.
        hand = Worker(
            client,
            task_queue=hand_queue,
            workflows=handwritten.WORKFLOWS,
            activities=handwritten.ACTIVITIES,
            max_concurrent_activities=200,
            max_concurrent_local_activities=200,
        )
        app = create_app(settings, store=store, temporal=client, catalog=catalog)
        async with (
            ours,
            hand,
            serving(app) as url,
            httpx.AsyncClient(base_url=url, timeout=60) as api,
        ):
            yield BenchPlatform(api, client, store, registry, task_queue, hand_queue)
    finally:
        await registry.close()
        await catalog.close()
        await store.close()
        mcp.terminate()
        mcp.wait(timeout=10)
        await env.shutdown()


def _start_mcp_server(port: int) -> subprocess.Popen[bytes]:
    # A child process, so the tool's own CPU is not charged to the worker's event loop.
    return subprocess.Popen(
        [sys.executable, "-m", "tests.peers.mcp_server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the MCP echo server exited at start")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the MCP echo server did not listen on port {port}")
