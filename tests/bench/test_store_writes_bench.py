"""bench.store_writes at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from bench.store_writes import measure


async def test_the_store_write_benchmark_times_each_write() -> None:
    results = await measure(writes=5)
    assert len(results) == 3
    assert all(wall > 0 and cpu >= 0 for wall, cpu in results.values())
