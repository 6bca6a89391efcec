"""How the run detail of a run with thousands of node runs answers: the contract's full
detail beside the opt-in views (`?nodeRuns=summary`, `/nodes?page=&perPage=`).

    .venv/bin/python -m bench.run_detail [--node-runs 5000] [--repeat 7]

One process: a SQLite store in a temp dir holding one run with N node runs (each with a
small input and output), the API under uvicorn on loopback (no Temporal needed: these are
reads), and an httpx client. Prints median and p90 latency and the body size per view.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from activities.run_start import new_run_record
from activities.store.factory import open_store
from activities.store.records import NodeRunRecord, WorkflowRecord
from app.main import create_app
from app.settings import Settings
from temporal_workflows.definition import WorkflowNode, WorkflowSpec


async def _seed(store: Any, node_runs: int) -> tuple[str, str]:
    node = WorkflowNode(id="echo", name="Echo", node_type="step", executor_key="builtin:echo")
    workflow = WorkflowRecord(
        id="wf-bench", **WorkflowSpec(name="bench", nodes=[node]).model_dump()
    )
    await store.create_workflow(workflow)
    run = new_run_record(workflow, "manual", {"n": node_runs})
    run.status = "completed"
    await store.insert_run(run)
    base = run.started_at
    await asyncio.gather(
        *(
            store.upsert_node_run(
                NodeRunRecord(
                    id=f"{run.id}.echo.{i + 1}",
                    workflow_run_id=run.id,
                    node_id="echo",
                    node_name="Echo",
                    status="completed",
                    attempt=1,
                    input_snapshot={"item": i, "text": "x" * 64},
                    output_snapshot={"item": i, "ok": True, "text": "y" * 64},
                    started_at=base,
                    finished_at=base,
                )
            )
            for i in range(node_runs)
        )
    )
    return workflow.id, run.id


async def _time(client: httpx.AsyncClient, url: str, repeat: int) -> dict[str, Any]:
    await client.get(url)  # warm-up
    took: list[float] = []
    size = 0
    for _ in range(repeat):
        began = time.perf_counter()
        answer = await client.get(url)
        took.append((time.perf_counter() - began) * 1000)
        assert answer.status_code == 200, answer.text[:200]
        size = len(answer.content)
    took.sort()
    return {
        "median_ms": round(statistics.median(took), 1),
        "p90_ms": round(took[int(0.9 * (len(took) - 1))], 1),
        "bytes": size,
    }


async def measure(node_runs: int, repeat: int) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'trellis.db'}")
        await store.connect()
        wf, run_id = await _seed(store, node_runs)
        # Nothing listens on port 1: the API serves reads without Temporal.
        settings = Settings(data_dir=Path(tmp), temporal_address="127.0.0.1:1")
        app = create_app(settings, store=store)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}/api/v1/workflows/{wf}/runs/{run_id}"
        views = {
            "detail (all node runs, the contract's shape)": base,
            "detail ?nodeRuns=summary": f"{base}?nodeRuns=summary",
            "/nodes (all)": f"{base}/nodes",
            "/nodes?page=1&perPage=100": f"{base}/nodes?page=1&perPage=100",
            "/nodes?page=last&perPage=100": f"{base}/nodes?page={node_runs // 100}&perPage=100",
        }
        try:
            async with httpx.AsyncClient(timeout=60) as client:
                return {name: await _time(client, url, repeat) for name, url in views.items()}
        finally:
            server.should_exit = True
            await serving
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-runs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    results = asyncio.run(measure(args.node_runs, args.repeat))
    print(f"run detail with {args.node_runs} node runs (median / p90 of {args.repeat}):")
    for name, found in results.items():
        print(
            f"  {name:48} {found['median_ms']:8.1f} ms {found['p90_ms']:8.1f} ms"
            f" {found['bytes'] / 1024:9.0f} KiB"
        )


if __name__ == "__main__":
    main()
