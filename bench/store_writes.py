"""What the worker's read-model writes cost on the embedded SQLite store, in-process.

Run: `python -m bench.store_writes [--writes 200]`. Times, one write at a time through the
real store (group commit and all), a run update (`update_run` of a run whose definition
has 20 steps) and a node-run merge, beside appending one small event through the same
store: the floor of any write (a transaction on the db thread). Prints the median of
five batches: wall time and this process's CPU per write, and the ratio to the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from activities.store.records import RunRecord
from activities.store.sqlite import SqliteStore
from bench import scenarios as sc
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.validation import normalise


async def _per_write(write: Callable[[int], Awaitable[object]], n: int) -> tuple[float, float]:
    """Median wall and CPU µs per write over five batches of `n` (after a warm-up)."""
    for i in range(n // 5):
        await write(i)
    walls, cpus = [], []
    for batch in range(1, 6):
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            await write(batch * n + i)
        walls.append((time.perf_counter() - wall) / n * 1e6)
        cpus.append((time.process_time() - cpu) / n * 1e6)
    return statistics.median(walls), statistics.median(cpus)


async def measure(writes: int) -> dict[str, tuple[float, float]]:
    """Per write: (wall µs, CPU µs) by kind of write."""
    with tempfile.TemporaryDirectory(prefix="trellis-writes-") as tmp:
        store = SqliteStore(Path(tmp) / "trellis.db")
        await store.connect()
        try:
            given = WorkflowSpec.model_validate({"name": "w", **sc.sequence(20, sc.MCP_ECHO)})
            spec = normalise(given, lambda: str(uuid.uuid4()))
            run = RunRecord(
                id="run-1", workflow_definition_id="w", workflow_version=1, definition_snapshot=spec
            )
            await store.insert_run(run)
            node = spec.nodes[0]

            async def event(i: int) -> object:
                return await store.append_event(run.id, {"type": "tick", "i": i})

            async def run_update(i: int) -> object:
                changes = {"status": "running", "pending_requirements": [], "final_output": i}
                return await store.update_run(run.id, i + 1, changes)

            async def node_run_merge(i: int) -> object:
                fields = {
                    "id": f"{run.id}.{node.id}.1", "workflow_run_id": run.id,
                    "node_id": node.id, "node_name": node.name, "status": "running",
                    "attempt": 1, "input_snapshot": {"text": "step 0"}, "rev": i + 1,
                }  # fmt: skip
                return await store.merge_node_run(fields)

            return {
                "append one event (the floor)": await _per_write(event, writes),
                "update_run (20-step definition)": await _per_write(run_update, writes),
                "merge_node_run": await _per_write(node_run_merge, writes),
            }
        finally:
            await store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200, help="per batch (five batches)")
    results = asyncio.run(measure(parser.parse_args(argv).writes))
    floor_wall = next(iter(results.values()))[0]
    print(f"{'write':<34} {'wall us':>9} {'cpu us':>9} {'x floor':>8}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<34} {wall:>9.0f} {cpu:>9.0f} {wall / floor_wall:>7.2f}x")


if __name__ == "__main__":
    main()
