"""Where the gap to the hand-written workflow goes: the same run with parts taken away.

Run: `python -m bench.attribution [--key builtin:echo] [--steps 20] [--reps 10]`.
Each variant is our real worker (`build_worker`) on its own task queue; only the store
it is handed differs. Started through `RunService` (what the trigger route calls), so
the HTTP share shows as the difference to the first line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from activities.run_start import RunStarter
from activities.store.base import Store
from app.schemas.run import RunCreate
from app.services.runs import RunService
from app.worker import build_worker
from bench import scenarios as sc
from bench.measure import Series, interleaved
from bench.platform import BenchPlatform, bench_platform


class DroppingStore:
    """Delegates to a real store but drops the run's read-model writes (named ones)."""

    def __init__(self, store: Store, *, runs: bool) -> None:
        self._store = store
        self._runs = runs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def upsert_node_run(self, record: Any) -> bool:
        return True

    async def get_node_run(self, node_run_id: str) -> None:
        return None

    async def append_event(self, run_id: str, event: dict[str, Any]) -> int:
        return 0

    async def update_run(self, run_id: str, rev: int, changes: dict[str, Any]) -> bool:
        if self._runs:
            return True
        return await self._store.update_run(run_id, rev, changes)


async def attribute(key: str, steps: int, reps: int, data_dir: Path) -> dict[str, Series]:
    """Median of each variant, interleaved, after a warm-up."""
    async with bench_platform(data_dir) as p, AsyncExitStack() as stack:
        workflow_id = await p.create(sc.sequence(steps, key))
        stores: dict[str, Store] = {
            "no HTTP (RunService.trigger)": p.store,
            "no HTTP, node-run writes dropped": DroppingStore(p.store, runs=False),
            "no HTTP, all read-model writes dropped": DroppingStore(p.store, runs=True),
        }
        workloads: dict[str, Any] = {"full: HTTP trigger": lambda: p.run_ours(workflow_id)}
        for name, store in stores.items():
            queue = f"bench-attr-{uuid.uuid4()}"
            worker = build_worker(p.client, task_queue=queue, store=store, executor=p.registry)
            await stack.enter_async_context(worker)
            workloads[name] = _via_service(p, workflow_id, queue)
        hand = sc.hand(steps, local=key == sc.ECHO)
        workloads["hand-written"] = lambda: p.run_hand("BenchSequence", hand)
        return await interleaved(workloads, reps, warmup=2)


def _via_service(p: BenchPlatform, workflow_id: str, queue: str) -> Any:
    service = RunService(store=p.store, starter=RunStarter(p.store, p.client, queue))

    async def one() -> tuple[float, str]:
        record = await p.store.get_workflow(workflow_id)
        assert record is not None
        started = time.perf_counter()
        run = await service.trigger(record, RunCreate(initial_input={"n": 1}), None)
        await p.client.get_workflow_handle(run.id).result()
        return (time.perf_counter() - started) * 1000, run.id

    return one


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", default=sc.ECHO)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="trellis-attr-") as tmp:
        series = asyncio.run(attribute(args.key, args.steps, args.reps, Path(tmp)))
    kind = "local activities" if args.key == sc.ECHO else "activities"
    print(f"{args.steps} steps of {args.key}; hand-written uses {kind}; ms median (p90)")
    for name, s in series.items():
        print(f"  {name:<42} {s.median:7.1f} ({s.p90:6.1f})  {s.median / args.steps:5.2f} ms/step")


if __name__ == "__main__":
    main()
