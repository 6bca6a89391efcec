"""The benchmark's platform: every part in its own process, as a user runs them.

One tuned Temporal dev server (`TUNING_ARGS`, the same flags `trellis dev` uses); the
product's API (`trellis api`) and worker (`trellis worker`) as two processes; the
hand-written baseline's worker as a third; one MCP server (`tests.peers.mcp_server`)
and one A2A echo agent (`bench.a2a_peer`) shared by both sides. This process only
drives: HTTP to the API, gRPC to Temporal for the hand-written workflows.

Its HTTP client is aiohttp: everything here shares two cores, and the client's own CPU
per request is taken from the platform it measures (httpx ~1 ms per request at 50 in
flight, aiohttp ~0.2 ms; docs/benchmarks.md, "Sixth session").
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from app.platform.devserver_flags import TUNING_ARGS
from bench.a2a_peer import AGENT
from temporal_workflows import search_attributes
from tests.conftest import temporal_binary
from tests.support.server import free_port

STARTUP_SECONDS = 60.0
MCP_SERVER_ID = "bench-mcp"


@dataclass
class Stack:
    api: aiohttp.ClientSession
    api_url: str
    client: Client
    hand_queue: str
    # Process ids of the product's processes, for the profiler.
    pids: dict[str, int] = field(default_factory=dict)

    async def create(self, definition: dict[str, Any]) -> str:
        """Save and enable a definition through the API; return its id."""
        body = {"name": f"bench-{uuid.uuid4().hex[:8]}", **definition}
        created = await self.send("POST", "/api/v1/workflows", 201, body)
        workflow_id: str = created["id"]
        await self.send("POST", f"/api/v1/workflows/{workflow_id}/toggle", 200, {"enabled": True})
        return workflow_id

    async def send(
        self,
        method: str,
        path: str,
        expected: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """One request; its JSON answer, or RuntimeError when its status is not `expected`."""
        async with self.api.request(method, path, json=body, headers=headers) as response:
            text = await response.text()
            if response.status != expected:
                raise RuntimeError(
                    f"{method} {path} -> {response.status}, expected {expected}: {text[:500]}"
                )
            return json.loads(text) if text else None

    async def trigger(self, workflow_id: str) -> str:
        """POST a run; its id. Retried on a dropped connection, under one Idempotency-Key
        (a keep-alive connection the server closed just as it was reused)."""
        key = uuid.uuid4().hex
        path, body = f"/api/v1/workflows/{workflow_id}/runs", {"initialInput": {"n": 1}}
        for attempt in range(3):
            try:
                accepted = await self.send("POST", path, 202, body, {"Idempotency-Key": key})
                break
            except aiohttp.ClientConnectionError:
                if attempt == 2:
                    raise
        run_id: str = accepted["runId"]
        return run_id

    async def detail(self, workflow_id: str, run_id: str) -> dict[str, Any]:
        detail: dict[str, Any] = await self.send(
            "GET", f"/api/v1/workflows/{workflow_id}/runs/{run_id}", 200
        )
        return detail

    async def start_hand(self, workflow: str, arg: Any) -> WorkflowHandle[Any, Any]:
        return await self.client.start_workflow(
            workflow, arg, id=f"hand-{uuid.uuid4()}", task_queue=self.hand_queue
        )


@contextlib.asynccontextmanager
async def bench_stack(
    data_dir: Path,
    store_url: str | None = None,
    api_workers: int = 1,
    read_cache_bytes: int | None = None,
) -> AsyncIterator[Stack]:
    """Start every part; stop them all when the block exits."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
    )
    temporal = env.client.service_client.config.target_host
    processes = _Processes(data_dir)
    try:
        mcp_port, agent_port, api_port = free_port(), free_port(), free_port()
        processes.start("mcp", "-m", "tests.peers.mcp_server", "--port", str(mcp_port))
        processes.start("a2a", "-m", "bench.a2a_peer", "--port", str(agent_port))
        mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
        agent_url = f"http://127.0.0.1:{agent_port}/agents/{AGENT}/"
        await processes.wait_http(
            f"http://127.0.0.1:{agent_port}/agents/{AGENT}/.well-known/agent-card.json"
        )
        await processes.wait_port(mcp_port)
        catalog = data_dir / "executors.json"
        catalog.write_text(
            json.dumps(
                {
                    "mcpServers": [
                        {"id": MCP_SERVER_ID, "url": mcp_url, "tools": ["echo", "sleepy"]}
                    ],
                    "a2aAgents": [{"name": AGENT, "url": agent_url}],
                }
            )
        )
        task_queue, hand_queue = f"bench-{uuid.uuid4()}", f"bench-hand-{uuid.uuid4()}"
        common = [
            "--data-dir", str(data_dir),
            "--temporal-address", temporal,
            "--task-queue", task_queue,
            "--executors-file", str(catalog),
        ]  # fmt: skip
        if store_url:
            common += ["--store-url", store_url]
        ready = {name: data_dir / f"{name}.ready" for name in ("worker", "hand")}
        processes.start(
            "worker", "-m", "app.cli", "worker", *common, "--ready-file", str(ready["worker"])
        )
        processes.start(
            "api", "-m", "app.cli", "api", *common, "--api-port", str(api_port),
            "--api-workers", str(api_workers),
            *([] if read_cache_bytes is None else ["--read-cache-bytes", str(read_cache_bytes)]),
        )  # fmt: skip
        processes.start(
            "hand", "-m", "bench.hand_worker", "--temporal", temporal, "--task-queue", hand_queue,
            "--mcp-url", mcp_url, "--agent-url", agent_url, "--ready-file", str(ready["hand"]),
        )  # fmt: skip
        api_url = f"http://127.0.0.1:{api_port}"
        await processes.wait_http(f"{api_url}/healthz")
        for name, path in ready.items():
            await processes.wait_file(name, path)
        async with aiohttp.ClientSession(
            base_url=api_url,
            timeout=aiohttp.ClientTimeout(total=60),
            connector=aiohttp.TCPConnector(limit=200),
        ) as api:
            yield Stack(
                api=api,
                api_url=api_url,
                client=env.client,
                hand_queue=hand_queue,
                pids={n: processes.pid(n) for n in ("api", "worker", "hand")},
            )
    finally:
        processes.stop()
        await env.shutdown()


def _terminated_with_parent() -> None:
    """In the child before it runs: SIGTERM when the thread that started it ends
    (Linux's PR_SET_PDEATHSIG; the benchmark starts its processes from its main thread)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class _Processes:
    """Child processes started with this Python, logs in the data dir; stopped together."""

    def __init__(self, data_dir: Path) -> None:
        self._dir = data_dir
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> None:
        log = (self._dir / f"{name}.log").open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # Each in its own process group, so stopping it stops what it started (uvicorn's
        # worker processes with --api-workers); and sent SIGTERM if this process dies
        # without stopping it (killed, or its terminal gone), so none is left running.
        self._procs[name] = subprocess.Popen(
            [sys.executable, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_terminated_with_parent,
        )

    def pid(self, name: str) -> int:
        return self._procs[name].pid

    def _check_alive(self) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                tail = (self._dir / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"bench process {name!r} exited at start:\n{tail}")

    async def _until(self, what: str, ok: Any) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not await ok():
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready after {STARTUP_SECONDS:.0f} s")
            await asyncio.sleep(0.05)

    async def wait_port(self, port: int) -> None:
        async def ok() -> bool:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                return False
            writer.close()
            return True

        await self._until(f"port {port}", ok)

    async def wait_http(self, url: str) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:

            async def ok() -> bool:
                try:
                    async with http.get(url) as response:
                        return response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    return False

            await self._until(url, ok)

    async def wait_file(self, name: str, path: Path) -> None:
        async def ok() -> bool:
            return await asyncio.to_thread(path.exists)

        await self._until(name, ok)

    def stop(self) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # anything of its group still running
