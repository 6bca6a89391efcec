"""bench.access_check at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from bench.access_check import SIZES, measure


async def test_the_access_check_benchmark_times_both_reads_for_each_size() -> None:
    results = await measure(checks=3)
    assert set(results) == set(SIZES)
    sizes = [size for size, _, _ in results.values()]
    assert sizes == sorted(sizes) and sizes[0] > 1000  # definitions that grow with steps
    assert all(column > 0 and document > 0 for _, column, document in results.values())
