"""Where a throughput workload's CPU goes, process by process.

Run: `python -m bench.cpu_split [--workload echo|mcp|a2a|delay] [--runs 400]`. Starts the
benchmark's stack (bench/stack.py), warms up, then runs `--runs` runs of 5 steps with 50
in flight, ours and then the hand-written equivalent, and prints each process's CPU
(user + system, from /proc: every thread, Rust and Go included, unlike py-spy's GIL
samples) per run and in percent of one core over the workload's wall time: the
Temporal dev server, the API, our worker, the hand-written worker and this process (the
benchmark's client: triggering runs and waiting on their results).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
import time
from pathlib import Path

from bench import scenarios as sc
from bench.live import hand_run, run_via_temporal
from bench.measure import Timed, throughput
from bench.stack import Stack, bench_stack

WORKLOADS = {"echo": sc.ECHO, "mcp": sc.MCP_ECHO, "a2a": sc.A2A_ECHO, "delay": sc.DELAY}
STEPS, IN_FLIGHT = 5, 50
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def dev_server_pid(port: int) -> int | None:
    """The Temporal dev server serving on `port` (found by its command line)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in args and str(port).encode() in args:
            return int(entry.name)
    return None


async def split(stack: Stack, name: str, one: Timed, runs: int) -> list[str]:
    """Lines: runs/s, then each process's CPU per run and share of a core."""
    port = int(stack.client.service_client.config.target_host.rsplit(":", 1)[1])
    pids = {"temporal": dev_server_pid(port), **stack.pids, "bench client": os.getpid()}
    await throughput(one, IN_FLIGHT, IN_FLIGHT)  # warm-up
    before = {n: cpu_seconds(p) for n, p in pids.items() if p}
    started = time.perf_counter()
    rate, _ = await throughput(one, runs, IN_FLIGHT)
    wall = time.perf_counter() - started
    used = {n: cpu_seconds(p) - before[n] for n, p in pids.items() if p}
    lines = [f"{name}: {rate:.1f} runs/s ({runs} runs in {wall:.1f} s)"]
    for proc, seconds in used.items():
        per_run = seconds / runs * 1000
        lines.append(f"  {proc:<13} {per_run:6.1f} ms CPU per run, {seconds / wall:6.1%} of a core")
    total = sum(used.values())
    lines.append(f"  {'all':<13} {total / runs * 1000:6.1f} ms CPU per run, {total / wall:6.1%}")
    return lines


async def measure(workload: str, runs: int, data_dir: Path) -> list[str]:
    key = WORKLOADS[workload]
    async with bench_stack(data_dir) as stack:
        workflow_id = await stack.create(sc.sequence(STEPS, key))
        ours = await split(stack, "ours", lambda: run_via_temporal(stack, workflow_id), runs)
        hand = hand_run(stack, "BenchSequence", sc.hand(STEPS, key))
        return ours + await split(stack, "hand-written", hand, runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="echo")
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="trellis-cpu-") as tmp:
        lines = asyncio.run(measure(args.workload, args.runs, Path(tmp)))
    print(f"{args.runs} runs x {STEPS} {sc.LABEL[WORKLOADS[args.workload]]} steps, "
          f"{IN_FLIGHT} in flight; load average at end: {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    main()
