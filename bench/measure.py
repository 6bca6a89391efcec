"""Timing helpers: interleaved repetitions after a warm-up, medians and p90, throughput."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Timed = Callable[[], Awaitable[tuple[float, str]]]


@dataclass
class Series:
    """Samples of one workload (ms per run) and the ids of the runs they timed."""

    samples: list[float] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The last run timed (its history is shown)."""
        return self.run_ids[-1] if self.run_ids else ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        return percentile(self.samples, 0.9)


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def interleaved(workloads: dict[str, Timed], reps: int, warmup: int) -> dict[str, Series]:
    """Run every workload `reps` times, round-robin, so drift hits all of them alike."""
    for _ in range(warmup):
        for run in workloads.values():
            await run()
    series = {name: Series() for name in workloads}
    for _ in range(reps):
        for name, run in workloads.items():
            ms, run_id = await run()
            series[name].samples.append(ms)
            series[name].run_ids.append(run_id)
    return series


async def throughput(one: Timed, runs: int, in_flight: int) -> tuple[float, list[str]]:
    """Runs per second for `runs` runs with at most `in_flight` at once; and their ids."""
    gate = asyncio.Semaphore(in_flight)
    ids: list[str] = []

    async def bounded() -> None:
        async with gate:
            _, run_id = await one()
            ids.append(run_id)

    started = time.perf_counter()
    await asyncio.gather(*(bounded() for _ in range(runs)))
    return runs / (time.perf_counter() - started), ids


async def paired_throughput(
    ours: Timed, hand: Timed, runs: int, in_flight: int
) -> tuple[float, float]:
    """Runs per second of each side, over `runs` runs each, in the order ours, hand, hand,
    ours (half the runs per block), after a warm-up of each at full concurrency.

    One block each, ours first, put whatever drifts during the benchmark (the dev
    server's in-memory store grows with every run; the machine's other load) on one side:
    the same code measured 0.74x in one run and 1.12x in another.
    """
    sides = {"ours": ours, "hand": hand}
    for one in sides.values():
        await throughput(one, min(in_flight, runs), in_flight)
    half = max(1, runs // 2)
    seconds = dict.fromkeys(sides, 0.0)
    for side in ("ours", "hand", "hand", "ours"):
        rate, _ = await throughput(sides[side], half, in_flight)
        seconds[side] += half / rate
    return 2 * half / seconds["ours"], 2 * half / seconds["hand"]
