"""How long a `trellis` command takes to start, beside the interpreter loading only the
libraries such a command needs.

    .venv/bin/python -m bench.cli_start [--runs 10]

Each row is a fresh process, timed from spawn to exit (wall) and by the CPU it used (its
user + system time). The commands talk to an API port nothing listens on, so each answers
at once with its one-line error: what is timed is the start, not the API. The baseline is
`python -c "import click, httpx, pydantic_settings, rich, yaml"`: the client libraries
every command loads. Runs are interleaved (baseline, then each command, `--runs` times);
medians are printed with their ratio to the baseline's.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[1]
BASELINE = ("-c", "import click, httpx, pydantic_settings, rich, yaml")


def commands(url: str) -> dict[str, tuple[str, ...]]:
    """Name → the interpreter's arguments."""
    cli = ("-m", "app.cli")
    return {
        "python + the CLI's libraries (baseline)": BASELINE,
        "trellis --help": (*cli, "--help"),
        "trellis runs list WF": (*cli, "runs", "list", "wf-1", "--url", url),
        "trellis approve RUN STEP": (*cli, "approve", "run-1", "step-1", "--url", url),
        "trellis workflows list": (*cli, "workflows", "list", "--url", url),
    }


def _timed(args: tuple[str, ...], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one process running `python args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *args], env=env, cwd=REPO, capture_output=True, check=False, timeout=60
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(runs: int) -> dict[str, tuple[float, float]]:
    """Name → (median wall s, median CPU s) over `runs` interleaved rounds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    rows = commands(f"http://127.0.0.1:{free_port()}")  # nothing listens there
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    for args in rows.values():  # once each first: the OS's file cache, .pyc files
        _timed(args, env)
    for _ in range(runs):
        for name, args in rows.items():
            samples[name].append(_timed(args, env))
    return {
        name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        for name, got in samples.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="interleaved rounds")
    args = parser.parse_args(argv)
    results = measure(args.runs)
    base_wall, base_cpu = next(iter(results.values()))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'process':<42} {'wall ms':>8} {'cpu ms':>8} {'wall x':>7} {'cpu x':>7}")
    for name, (wall, cpu) in results.items():
        print(
            f"{name:<42} {wall * 1000:>8.0f} {cpu * 1000:>8.0f} "
            f"{wall / base_wall:>7.2f} {cpu / base_cpu:>7.2f}"
        )


if __name__ == "__main__":
    main()
