"""What one read costs the API, without `wrk` or other processes sharing the cores.

Run: `python -m bench.reads_in_process [--requests 300] [--only detail]`. Builds a store
with the shapes bench.run reads (a run of 20 MCP steps with its 20 node runs; a workflow
with 20 runs of 5 node runs each), serves the real app in this process over ASGI, and
times the run detail and the list of runs one request at a time, beside `GET /healthz`
through the same app and client (the floor: routing, middleware and the client itself):
answered afresh (the read cache off), kept (nothing written meanwhile), and after a
write (the cache on, a node run written before each read, as a poller meets a running
run: every read misses what is kept). Prints the median of five batches: wall time and
this process's CPU per request (a write before a read is not timed).
`--only` times only the requests whose name contains it (to profile one with py-spy).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from activities.store.records import NodeRunRecord, RunRecord, WorkflowRecord
from activities.store.sqlite import SqliteStore
from app.main import create_app
from app.settings import Settings
from bench import scenarios as sc
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.validation import normalise

T0 = datetime(2026, 11, 26, 12, tzinfo=UTC)


async def _workflow(store: SqliteStore, name: str, steps: int) -> WorkflowRecord:
    given = WorkflowSpec.model_validate({"name": name, **sc.sequence(steps, sc.MCP_ECHO)})
    spec = normalise(given, lambda: str(uuid.uuid4()))  # node ids, as saving assigns them
    record = WorkflowRecord(**spec.model_dump(by_alias=False), id=name, enabled=True)
    await store.create_workflow(record)
    return record


async def _run(store: SqliteStore, wf: WorkflowRecord, index: int) -> str:
    run_id = f"run-{wf.id}-{index}"
    started = T0 + timedelta(seconds=index)
    await store.insert_run(
        RunRecord(
            id=run_id, workflow_definition_id=wf.id, workflow_version=1, status="completed",
            started_at=started, finished_at=started + timedelta(seconds=1),
            definition_snapshot=wf.spec(), final_output={"result": "done"},
        )
    )  # fmt: skip
    for i, node in enumerate(wf.nodes):
        at = started + timedelta(milliseconds=10 * i)
        await store.upsert_node_run(
            NodeRunRecord(
                id=f"{run_id}.{node.id}.1", workflow_run_id=run_id, node_id=node.id,
                node_name=node.name, status="completed", attempt=1,
                input_snapshot={"text": f"step {i}"}, output_snapshot={"result": f"step {i}"},
                started_at=at, finished_at=at + timedelta(milliseconds=8),
                resolved_executor={"kind": "mcp", "key": sc.MCP_ECHO, "tool": "echo"},
            )
        )  # fmt: skip
    return run_id


Write = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


async def _per_request(
    client: httpx.AsyncClient, url: str, n: int, before: Write = _nothing
) -> tuple[float, float, int]:
    """Median wall and CPU ms per request over five batches of `n` (`before` each, untimed);
    the body's size."""
    size = len((await client.get(url)).raise_for_status().content)
    for _ in range(n // 5):  # warm up
        await before()
        await client.get(url)
    walls, cpus = [], []
    for _ in range(5):
        wall = cpu = 0.0
        for _ in range(n):
            await before()
            started, cpu_started = time.perf_counter(), time.process_time()
            await client.get(url)
            wall += time.perf_counter() - started
            cpu += time.process_time() - cpu_started
        walls.append(wall / n * 1000)
        cpus.append(cpu / n * 1000)
    return statistics.median(walls), statistics.median(cpus), size


def _rewriting(store: SqliteStore, run_id: str) -> Write:
    """Writes the run's first node run again, a revision higher each time."""
    revs = itertools.count(1)

    async def write() -> None:
        first = (await store.list_node_runs([run_id]))[0]
        await store.upsert_node_run(first.model_copy(update={"rev": next(revs)}))

    return write


async def measure(requests: int, only: str = "") -> dict[str, tuple[float, float, int]]:
    """Per request: (wall ms, CPU ms, body bytes) by request."""
    results: dict[str, tuple[float, float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="trellis-reads-") as tmp:
        data = Path(tmp)
        store = SqliteStore(data / "trellis.db")
        await store.connect()
        try:
            detail_wf = await _workflow(store, "detail", 20)
            detail_run = await _run(store, detail_wf, 0)
            list_wf = await _workflow(store, "listed", 5)
            for i in range(20):
                await _run(store, list_wf, i)
            detail = f"/api/v1/workflows/detail/runs/{detail_run}"
            listed = "/api/v1/workflows/listed/runs"
            # The same reads answered afresh every time (the read cache off), then with the
            # cache: nothing is written meanwhile, so every read after the first is a hit.
            cached = Settings.model_fields["read_cache_bytes"].default
            detail_write = _rewriting(store, detail_run)
            list_write = _rewriting(store, f"run-{list_wf.id}-19")
            for cache_bytes, label, writes in (
                (0, "afresh", (_nothing, _nothing)),
                (cached, "cached", (_nothing, _nothing)),
                (cached, "after a write", (detail_write, list_write)),
            ):
                urls = {
                    f"GET run detail (20 node runs), {label}": (detail, writes[0]),
                    f"GET list runs (20 runs x 5 node runs), {label}": (listed, writes[1]),
                }
                if not cache_bytes:
                    urls = {"GET /healthz (the floor)": ("/healthz", _nothing), **urls}
                # No Temporal: reads do not need it (the app only logs that it is away).
                settings = Settings(
                    data_dir=data, temporal_address="127.0.0.1:1", read_cache_bytes=cache_bytes
                )
                results.update(await _timed_reads(settings, store, urls, requests, only))
        finally:
            await store.close()
    return results


async def _timed_reads(
    settings: Settings,
    store: SqliteStore,
    urls: dict[str, tuple[str, Write]],
    requests: int,
    only: str,
) -> dict[str, tuple[float, float, int]]:
    """Each url's (wall ms, CPU ms, bytes) through a fresh app on `store` with `settings`,
    its write made before each read."""
    app = create_app(settings, store=store)
    timed = {}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        for name, (url, before) in urls.items():
            if only in name:
                timed[name] = await _per_request(client, url, requests, before)
    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="per batch (five batches)")
    parser.add_argument(
        "--only", default="", help="time only the requests whose name contains this (profiling)"
    )
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    results = asyncio.run(measure(args.requests, args.only))
    print(f"{'request':<50} {'wall ms':>8} {'cpu ms':>8} {'bytes':>8}")
    for name, (wall, cpu, size) in results.items():
        print(f"{name:<50} {wall:>8.3f} {cpu:>8.3f} {size:>8,}")


if __name__ == "__main__":
    main()
