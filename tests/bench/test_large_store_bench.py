"""bench.large_store at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from bench.large_store import measure


async def test_the_large_store_benchmark_times_each_read_beside_how_it_was_read() -> None:
    lines = await measure(runs=400, gates=40, versions=20)
    assert [label.split(" (")[0] for label, _, _ in lines] == [
        "a small workflow's failed runs",
        "page 500 of the big workflow's runs",
        "the inbox's open gates",
        "the reconciler's never-started runs",
        "a workflow's versions",
    ]
    assert all(now > 0 and before > 0 for _, now, before in lines)
