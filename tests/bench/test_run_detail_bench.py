"""bench.run_detail at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from bench.run_detail import measure


async def test_the_run_detail_benchmark_measures_every_view() -> None:
    results = await measure(node_runs=120, repeat=1)
    assert len(results) == 5
    full = results["detail (all node runs, the contract's shape)"]
    summary = results["detail ?nodeRuns=summary"]
    assert summary["bytes"] < full["bytes"]
