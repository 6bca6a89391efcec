"""bench.gate_memory at toy size, so it does not rot (it asserts nothing about memory)."""

from __future__ import annotations

from bench.gate_memory import measure


async def test_the_gate_memory_benchmark_holds_runs_and_reads_the_workers_rss() -> None:
    found = await measure(runs=5, max_cached=10)
    assert found["runs_held"] == 5
    assert found["held"]["VmRSS"] > 0 and found["held"]["VmHWM"] >= found["held"]["VmRSS"]
