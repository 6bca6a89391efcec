"""Where a sequential step's time goes, read from the runs' Temporal histories.

Run: `python -m bench.step_timeline [--workload delay|mcp|a2a] [--runs 12]`. Starts
the benchmark's stack (bench/stack.py), runs 20 sequential steps on our API (completion
over SSE) and the hand-written equivalent alternately, and splits each step's time by
the server's own event timestamps: a workflow task waiting for the worker, the worker
holding it (our activation, or theirs), the activity's dispatch, the activity running
(our step activity with its store write, or the bare call), and the completion's way
back to the next workflow task. Medians per step, and the sum per run.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import scenarios as sc
from bench.live import hand_run, run_over_sse
from bench.stack import bench_stack

# Steps that run as activities (a `builtin:echo` runs inline: it has no activity to split).
WORKLOADS = {"delay": sc.DELAY, "mcp": sc.MCP_ECHO, "a2a": sc.A2A_ECHO}
STEPS = 20
Totals = dict[str, defaultdict[str, list[float]]]
WARM_UP = 3
# Each phase: the event that ends it, and the one it is measured from.
PHASES = {
    "task waits for the worker": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    ),
    "worker holds the task": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    ),
    "activity dispatched": (
        EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ),
    "activity runs": (
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
    ),
    "next task scheduled": (
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    ),
}


async def phases(client: Client, workflow_id: str) -> dict[str, list[float]]:
    """Each phase's durations (ms) in one run's history, in the order they happened."""
    last: dict[int, float] = {}
    found: dict[str, list[float]] = defaultdict(list)
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        at = event.event_time.ToNanoseconds() / 1e6
        for name, (ends, starts) in PHASES.items():
            if event.event_type == ends and starts in last:
                found[name].append(at - last.pop(starts))
        last[event.event_type] = at
    return found


async def measure(workload: str, runs: int, data_dir: Path) -> list[str]:
    """The report's lines: per phase, ours and the hand-written side."""
    key = WORKLOADS[workload]
    totals: Totals = {"ours": defaultdict(list), "hand": defaultdict(list)}
    async with bench_stack(data_dir) as stack:
        ours = await stack.create(sc.sequence(STEPS, key))
        hand = hand_run(stack, "BenchSequence", sc.hand(STEPS, key))
        for _ in range(WARM_UP):
            await run_over_sse(stack, ours)
            await hand()
        for _ in range(runs):
            _, run_id = await run_over_sse(stack, ours)
            _, hand_id = await hand()
            for side, workflow_id in (("ours", run_id), ("hand", hand_id)):
                for name, values in (await phases(stack.client, workflow_id)).items():
                    totals[side][name].extend(values)
    return _report(totals, runs)


def _report(totals: Totals, runs: int) -> list[str]:
    head = ("phase", "ours ms/step", "per run", "hand ms/step", "per run")
    lines = ["{:28s} {:>13s} {:>8s} {:>13s} {:>8s}".format(*head)]
    for name in PHASES:
        cells = []
        for side in ("ours", "hand"):
            values = totals[side].get(name) or [0.0]
            cells.append(f"{statistics.median(values):13.2f} {sum(values) / runs:8.1f}")
        lines.append(f"{name:28s} {cells[0]} {cells[1]}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="delay")
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="trellis-timeline-") as tmp:
        lines = asyncio.run(measure(args.workload, args.runs, Path(tmp)))
    label = sc.LABEL[WORKLOADS[args.workload]]
    print(f"{args.runs} runs x {STEPS} sequential {label} steps, ours and hand-written, "
          "medians per step and sums per run, from the histories' event times")  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    main()
