"""The benchmark still runs: every workload measured once, at toy sizes, on real parts."""

from pathlib import Path

from bench.run import Sizes, run_benchmark

TINY = Sizes(
    steps=3, branches=4, runs=4, run_steps=2, in_flight=2, reps=1, warmup=0, executor_calls=5
)


async def test_the_benchmark_measures_every_workload_beside_its_baseline(tmp_path: Path) -> None:
    report = await run_benchmark(TINY, tmp_path)
    labels = [row.name.split(")")[0] + ")" for row in report.rows if row.name.startswith("(")]
    assert sorted(set(labels)) == ["(a)", "(b)", "(c)", "(d)"]
    compared = [row for row in report.rows if row.hand is not None]
    assert all(row.ours > 0 and row.hand is not None and row.hand > 0 for row in compared)
    assert all(counts["total"] > 0 for counts in report.events.values())
