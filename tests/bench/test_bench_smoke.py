"""The benchmark still runs: every workload measured once, at toy sizes, on real parts."""

from pathlib import Path

import pytest

from bench.run import Report, Sizes, run_benchmark

TINY = Sizes(
    steps=3,
    branches=4,
    runs=4,
    run_steps=2,
    in_flight=2,
    reps=1,
    warmup=0,
    executor_calls=5,
    approvals=2,
    controls=1,
)


@pytest.fixture(scope="module")
async def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    # One benchmark run for the module: it is the slow part.
    data_dir: Path = tmp_path_factory.mktemp("bench")
    return await run_benchmark(TINY, data_dir)


def test_the_benchmark_measures_every_workload_beside_its_baseline(report: Report) -> None:
    labels = [row.name.split(")")[0] + ")" for row in report.rows if row.name.startswith("(")]
    assert sorted(set(labels)) == ["(a)", "(b)", "(c)", "(d)", "(e)"]
    compared = [row for row in report.rows if row.hand is not None]
    assert all(row.ours > 0 and row.hand is not None and row.hand > 0 for row in compared)
    assert all(counts["total"] > 0 for counts in report.events.values())


def test_the_benchmark_times_the_approve_call_and_each_control_over_http(report: Report) -> None:
    rows = [row for row in report.rows if row.name.startswith("(e)")]
    assert [row.name.split()[1] for row in rows] == [
        "approve",
        "approve",
        "pause",
        "resume",
        "cancel",
    ]
    assert all(row.ours > 0 and row.ours_p90 is not None for row in rows)
