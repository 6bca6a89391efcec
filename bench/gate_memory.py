"""Worker memory with many runs held at approval gates.

    .venv/bin/python -m bench.gate_memory [--runs 2000] [--max-cached N]

One tuned dev server (in memory), the API in this process, and `trellis worker` as its
own process (so its RSS is its own). Triggers `--runs` runs of a one-step workflow whose
step waits for a confirmation, waits until every run is `awaiting_approval`, then reads
the worker's RSS (VmRSS) and peak (VmHWM) from /proc. `--max-cached` sets
TRELLIS_WORKER_MAX_CACHED_WORKFLOWS (the worker's sticky cache) for the worker.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from temporalio.testing import WorkflowEnvironment

from activities.store.factory import open_store
from app.main import create_app
from app.platform.devserver import temporal_binary
from app.platform.devserver_flags import TUNING_ARGS
from app.settings import Settings
from app.temporal import with_pydantic
from temporal_workflows import search_attributes

GATED = {
    "nodes": [
        {
            "name": "Approve",
            "nodeType": "step",
            "executorKey": "builtin:echo",
            "humanReview": {"requiresConfirmation": True},
        }
    ]
}


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process, in MB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = round(int(value.split()[0]) / 1024, 1)
    return found


def start_worker(env: dict[str, str], ready: Path) -> subprocess.Popen[bytes]:
    worker = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker", "--ready-file", str(ready)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    return worker


async def measure(runs: int, max_cached: int | None) -> dict[str, Any]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
    )
    address = env.client.service_client.config.target_host
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        task_queue = f"gates-{uuid.uuid4().hex[:8]}"
        settings = Settings(data_dir=data_dir, task_queue=task_queue, temporal_address=address)
        worker_env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
        worker_env.update(
            TRELLIS_DATA_DIR=str(data_dir),
            TRELLIS_TEMPORAL_ADDRESS=address,
            TRELLIS_TASK_QUEUE=task_queue,
            TRELLIS_STORE_URL=settings.resolved_store_url,
        )
        if max_cached is not None:
            worker_env["TRELLIS_WORKER_MAX_CACHED_WORKFLOWS"] = str(max_cached)
        store = open_store(settings.resolved_store_url)
        await store.connect()
        worker = start_worker(worker_env, data_dir / "worker.ready")
        idle = rss_mb(worker.pid)
        app = create_app(settings, store=store, temporal=with_pydantic(env.client))
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        try:
            while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as api:
                began = time.monotonic()
                held = await _hold_runs(api, runs)
                seconds = round(time.monotonic() - began, 1)
            await asyncio.sleep(2)  # let the worker settle after the last gate opened
            return {
                "runs_held": held,
                "seconds_to_hold": seconds,
                "max_cached": max_cached,
                "idle": idle,
                "held": rss_mb(worker.pid),
            }
        finally:
            worker.terminate()
            worker.wait(60)
            server.should_exit = True
            await serving
            await store.close()
            await env.shutdown()


async def _hold_runs(api: httpx.AsyncClient, runs: int) -> int:
    created = await api.post("/api/v1/workflows", json={"name": "gates", **GATED})
    wf = created.json()["id"]
    await api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": True})
    gate = asyncio.Semaphore(32)

    async def trigger() -> None:
        async with gate:
            answer = await api.post(f"/api/v1/workflows/{wf}/runs", json={})
            assert answer.status_code == 202, answer.text

    await asyncio.gather(*(trigger() for _ in range(runs)))
    deadline = time.monotonic() + 600
    while True:
        listed = await api.get(
            f"/api/v1/workflows/{wf}/runs", params={"status": "awaiting_approval", "perPage": 1}
        )
        held = int(listed.json()["pagination"]["total"])
        if held >= runs or time.monotonic() > deadline:
            return held
        await asyncio.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--max-cached", type=int, default=None)
    args = parser.parse_args()
    found = asyncio.run(measure(args.runs, args.max_cached))
    print(
        f"{found['runs_held']} runs held at gates in {found['seconds_to_hold']} s"
        f" (max_cached_workflows {found['max_cached'] or 'default'}): worker RSS"
        f" idle {found['idle']['VmRSS']} MB, held {found['held']['VmRSS']} MB"
        f" (peak {found['held']['VmHWM']} MB)"
    )


if __name__ == "__main__":
    main()
