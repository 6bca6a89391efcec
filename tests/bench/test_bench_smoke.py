"""The benchmark still runs: every workload measured once, at toy sizes, on real processes."""

from pathlib import Path

import pytest

from bench import measure
from bench.measure import Timed, paired_throughput
from bench.reads import parse_wrk
from bench.run import Report, Sizes, run_benchmark

TINY = Sizes(
    steps=2,
    branches=3,
    runs=2,
    run_steps=2,
    in_flight=2,
    reps=1,
    warmup=0,
    approvals=1,
    wrk_seconds=1,
)


@pytest.fixture(scope="module")
async def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    # One benchmark run for the module: it is the slow part.
    data_dir: Path = tmp_path_factory.mktemp("bench")
    return await run_benchmark(TINY, data_dir)


def test_the_benchmark_measures_every_workload_beside_its_baseline(report: Report) -> None:
    labels = {row.name.split(")")[0] + ")" for row in report.rows}
    assert {"(a)", "(b)", "(c)", "(d)", "(f)"} <= labels
    compared = [row for row in report.rows if row.hand is not None]
    assert compared and all(row.ours > 0 and row.hand and row.hand > 0 for row in compared)
    assert all(row.ratio is not None for row in compared)


def test_the_benchmark_measures_sse_delivery_lag_and_children_in_flight(report: Report) -> None:
    lag = next(row for row in report.rows if row.name.startswith("(d) SSE delivery lag: step"))
    assert lag.ours > 0
    flight = [row for row in report.rows if "children in flight" in row.name]
    assert flight and all(row.ours >= 1 and row.hand and row.hand >= 1 for row in flight)


def test_wrk_reports_are_read_for_p50_p99_and_rate() -> None:
    text = """
  Latency Distribution
     50%    2.10ms
     75%    3.00ms
     90%    5.00ms
     99%   12.50ms
  10000 requests in 5.00s, 1.00MB read
  Non-2xx or 3xx responses: 3
Requests/sec:   2000.00
"""
    result = parse_wrk(text)
    assert (result.p50, result.p99, result.rps, result.errors) == (2.1, 12.5, 2000.0, 3)


async def test_throughput_is_measured_in_blocks_ours_hand_hand_ours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two sides whose runs take 10 ms and 40 ms, one at a time: each side's rate is its own
    # runs over its own blocks' time, whatever the order; the order spreads drift alike.
    # On a clock of the test's own: real sleeps woke late on a loaded machine (a 20 ms
    # lag alike on both sides halved the ratio) and failed it about one run in twenty.
    order: list[str] = []
    now = [0.0]
    monkeypatch.setattr(measure.time, "perf_counter", lambda: now[0])

    def side(name: str, seconds: float) -> Timed:
        async def one() -> tuple[float, str]:
            order.append(name)
            now[0] += seconds
            return seconds * 1000, name

        return one

    ours, hand = await paired_throughput(side("ours", 0.01), side("hand", 0.04), 4, 1)
    measured = order[2:]  # after one warm-up run each
    assert measured == ["ours"] * 2 + ["hand"] * 4 + ["ours"] * 2
    assert (ours, hand) == (pytest.approx(100.0), pytest.approx(25.0))
