"""bench.reads_in_process at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from bench.reads_in_process import measure


async def test_the_in_process_read_benchmark_reads_each_shape() -> None:
    results = await measure(requests=5)
    floor, detail, listed, cached_detail, cached_list, written_detail, written_list = (
        results.values()
    )
    assert all(wall > 0 and cpu >= 0 for wall, cpu, _ in results.values())
    # A run detail of 20 node runs and a page of 20 runs are far more than the health check.
    assert listed[2] > detail[2] > 10 * floor[2]
    # Answered from the read cache, the same bodies; after a write, the same shapes.
    assert (cached_detail[2], cached_list[2]) == (detail[2], listed[2])
    assert written_detail[2] > 10 * floor[2] and written_list[2] > 10 * floor[2]


async def test_only_times_the_requests_it_names() -> None:
    results = await measure(requests=5, only="run detail")
    assert list(results) == [
        "GET run detail (20 node runs), afresh",
        "GET run detail (20 node runs), cached",
        "GET run detail (20 node runs), after a write",
    ]
