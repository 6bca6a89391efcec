"""The benchmark: our REST-driven interpreter beside hand-written Temporal workflows.

Run from the repo root: `python -m bench.run [--quick] [--json out.json]`.
Everything runs in one process against one tuned dev server (bench/platform.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

from activities.projections import write_node_run
from bench import scenarios as sc
from bench.controls import control_rows
from bench.executor_overhead import _time as time_executor
from bench.measure import Series, interleaved, throughput
from bench.platform import BenchPlatform, bench_platform
from bench.report import Row, print_report

LATENCY_TARGET, THROUGHPUT_TARGET = 1.2, 0.8


@dataclass(frozen=True)
class Sizes:
    steps: int = 20
    branches: int = 50
    runs: int = 200
    run_steps: int = 5
    in_flight: int = 50
    reps: int = 10
    warmup: int = 2
    executor_calls: int = 300
    approvals: int = 100
    controls: int = 30


FULL = Sizes()
QUICK = replace(FULL, runs=100, reps=3, warmup=1, executor_calls=100, approvals=20, controls=10)


@dataclass
class Report:
    sizes: Sizes
    rows: list[Row] = field(default_factory=list)
    # Workload -> history events by type for one run (and per step).
    events: dict[str, dict[str, Any]] = field(default_factory=dict)


async def run_benchmark(sizes: Sizes, data_dir: Path) -> Report:
    """Measure every workload on a fresh platform; return the rows and history counts."""
    report = Report(sizes)
    async with bench_platform(data_dir) as p:
        echo_run_id = await _sequential(p, sizes, report)
        report.rows += [_post_row(p), await _store_row(p, echo_run_id, sizes.executor_calls)]
        await _parallel(p, sizes, report)
        await _throughput(p, sizes, report)
        await _executor(p, sizes, report)
        report.rows += await control_rows(p, sizes.approvals, sizes.controls, sizes.warmup)
    return report


async def _ours(p: BenchPlatform, definition: dict[str, Any]) -> Any:
    workflow_id = await p.create(definition)

    async def one() -> tuple[float, str]:
        ms, run_id = await p.run_ours(workflow_id)
        await p.confirm(workflow_id, run_id)
        return ms, run_id

    return one


def _hand(p: BenchPlatform, workflow: str, steps: int, local: bool) -> Any:
    return lambda: p.run_hand(workflow, sc.hand(steps, local))


async def _sequential(p: BenchPlatform, s: Sizes, report: Report) -> str:
    n = s.steps
    series = await interleaved(
        {
            "ours echo": await _ours(p, sc.sequence(n, sc.ECHO)),
            "ours delay": await _ours(p, sc.sequence(n, sc.DELAY)),
            "ours mcp": await _ours(p, sc.sequence(n, sc.MCP_ECHO)),
            "hand activities": _hand(p, "BenchSequence", n, local=False),
            "hand local": _hand(p, "BenchSequence", n, local=True),
        },
        s.reps,
        s.warmup,
    )
    a = f"(a) {n} steps sequential"
    report.rows += [
        _latency(
            f"{a}, builtin:echo vs local activities", series["ours echo"], series["hand local"]
        ),
        _latency(
            f"{a}, builtin:echo vs activities", series["ours echo"], series["hand activities"]
        ),
        _latency(
            f"{a}, builtin:delay 0s vs activities", series["ours delay"], series["hand activities"]
        ),
    ]
    # (d) in situ: the same remote-activity path, only the executor differs.
    report.rows.append(
        Row(
            f"(d) {n} steps, MCP echo vs builtin:delay 0s (ours both)",
            series["ours mcp"].median,
            series["ours delay"].median,
            "ms",
            series["ours mcp"].median / series["ours delay"].median,
            None,
            note=f"{(series['ours mcp'].median - series['ours delay'].median) / n:+.2f} ms/step",
        )
    )
    for name in series:
        report.events[f"{a}: {name}"] = await _history(p, series[name].run_id, n)
    return series["ours echo"].run_id


async def _parallel(p: BenchPlatform, s: Sizes, report: Report) -> None:
    n = s.branches
    series = await interleaved(
        {
            "ours echo": await _ours(p, sc.parallel(n, sc.ECHO)),
            "ours delay": await _ours(p, sc.parallel(n, sc.DELAY)),
            "hand activities": _hand(p, "BenchParallel", n, local=False),
            "hand local": _hand(p, "BenchParallel", n, local=True),
        },
        s.reps,
        s.warmup,
    )
    b = f"(b) {n}-way parallel"
    report.rows += [
        _latency(
            f"{b}, builtin:echo vs local activities", series["ours echo"], series["hand local"]
        ),
        _latency(
            f"{b}, builtin:echo vs activities", series["ours echo"], series["hand activities"]
        ),
        _latency(
            f"{b}, builtin:delay 0s vs activities", series["ours delay"], series["hand activities"]
        ),
    ]
    for name in series:
        report.events[f"{b}: {name}"] = await _history(p, series[name].run_id, n)


async def _throughput(p: BenchPlatform, s: Sizes, report: Report) -> None:
    n, runs, k = s.run_steps, s.runs, s.in_flight
    echo = await _ours(p, sc.sequence(n, sc.ECHO))
    delay = await _ours(p, sc.sequence(n, sc.DELAY))
    hand_act = _hand(p, "BenchSequence", n, local=False)
    hand_local = _hand(p, "BenchSequence", n, local=True)
    rates: dict[str, float] = {}
    for name, one in (
        ("ours echo", echo),
        ("hand local", hand_local),
        ("ours delay", delay),
        ("hand activities", hand_act),
    ):
        await throughput(one, min(k, runs), k)  # warm-up at full concurrency
        rates[name], _ = await throughput(one, runs, k)
    c = f"(c) {runs} runs x {n} steps, {k} in flight"
    report.rows += [
        _rate(f"{c}, builtin:echo vs local activities", rates["ours echo"], rates["hand local"]),
        _rate(f"{c}, builtin:echo vs activities", rates["ours echo"], rates["hand activities"]),
        _rate(
            f"{c}, builtin:delay 0s vs activities", rates["ours delay"], rates["hand activities"]
        ),
    ]


async def _executor(p: BenchPlatform, s: Sizes, report: Report) -> None:
    # bench/executor_overhead.py's timing, on this platform's registry and MCP server.
    builtin_ms = await time_executor(p.registry, sc.ECHO, s.executor_calls)
    mcp_ms = await time_executor(p.registry, sc.MCP_ECHO, s.executor_calls)
    report.rows.append(
        Row(
            "(d) one executor call, MCP echo (shared session) vs builtin:echo",
            mcp_ms,
            builtin_ms,
            "ms",
            mcp_ms / builtin_ms,
            None,
            note=f"{mcp_ms - builtin_ms:+.2f} ms/call; 'hand' column = builtin",
        )
    )


def _post_row(p: BenchPlatform) -> Row:
    post = Series(list(p.post_ms))
    return Row(
        "    of which: trigger POST -> 202 (store insert + start_workflow)",
        post.median,
        None,
        "ms",
        None,
        None,
        ours_p90=post.p90,
    )


async def _store_row(p: BenchPlatform, run_id: str, writes: int) -> Row:
    # What one node-run write costs: a remote step writes one (two if it runs > 0.2 s);
    # local steps are written by the workflow, batched.
    started = time.perf_counter()
    for i in range(writes):
        record = {
            "id": f"{run_id}.store-bench.{i}",
            "workflow_run_id": run_id,
            "node_id": "store-bench",
            "node_name": "store-bench",
            "node_type": "step",
            "status": "running",
            "attempt": 1,
            "rev": 1,
        }
        await write_node_run(p.store, record, [{"type": "node_started", "runId": run_id}])
    ms = (time.perf_counter() - started) * 1000 / writes
    return Row(
        "    of which: one node-run write (merge + event, one transaction)",
        ms,
        None,
        "ms",
        None,
        None,
        note="x1 per remote step",
    )


def _latency(name: str, ours: Series, hand: Series) -> Row:
    return Row(
        name,
        ours.median,
        hand.median,
        "ms",
        ours.median / hand.median,
        LATENCY_TARGET,
        ours_p90=ours.p90,
        hand_p90=hand.p90,
    )


def _rate(name: str, ours: float, hand: float) -> Row:
    return Row(name, ours, hand, "runs/s", ours / hand, THROUGHPUT_TARGET)


async def _history(p: BenchPlatform, run_id: str, steps: int) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    async for event in p.client.get_workflow_handle(run_id).fetch_history_events():
        counts[EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")] += 1
    total = sum(counts.values())
    return {"total": total, "per_step": round(total / steps, 2), "by_type": dict(counts)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and runs")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    sizes = QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        report = asyncio.run(run_benchmark(sizes, Path(tmp)))
    print_report(report.rows, report.events)
    if args.json:
        payload = {
            "sizes": asdict(report.sizes),
            "rows": [asdict(r) for r in report.rows],
            "events": report.events,
        }
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
