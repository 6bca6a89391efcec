"""Where a sequential run's time goes: cProfile of the worker + API process around N runs.

Run: `python -m bench.profile [--key builtin:echo] [--steps 20] [--runs 20]`.
The event loop (API, activities, store, Temporal client) runs in this thread and is
profiled; workflow activations run on the SDK's worker threads and show up here only as
waits, so compare `--key` variants and the hand-written runs in `bench.run` as well.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import tempfile
import time
from pathlib import Path

from bench import scenarios as sc
from bench.platform import bench_platform


async def profile(key: str, steps: int, runs: int, data_dir: Path) -> pstats.Stats:
    """Profile `runs` runs of `steps` steps of `key`, after two warm-up runs."""
    async with bench_platform(data_dir) as p:
        workflow_id = await p.create(sc.sequence(steps, key))
        for _ in range(2):
            await p.run_ours(workflow_id)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(runs):
            await p.run_ours(workflow_id)
        profiler.disable()
        elapsed = (time.perf_counter() - started) * 1000 / runs
    print(f"{runs} runs of {steps} x {key}: {elapsed:.1f} ms/run under the profiler")
    return pstats.Stats(profiler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", default=sc.ECHO)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="trellis-profile-") as tmp:
        stats = asyncio.run(profile(args.key, args.steps, args.runs, Path(tmp)))
    stats.sort_stats("tottime").print_stats(args.top)
    # Our own code by cumulative time: which of our calls the loop spends its time under.
    stats.sort_stats("cumulative").print_stats(r"/work/main/(activities|app|bench)/", args.top)


if __name__ == "__main__":
    main()
