"""How long `trellis api` and `trellis worker` take to start, beside an API and a worker
written by hand with the same libraries (bench/bare_servers.py).

    .venv/bin/python -m bench.server_start [--runs 5]

One Temporal dev server, started here, serves every row. Each row is a fresh process,
timed from spawn until it is ready: an API when its `/readyz` answers 200 (it has reached
Temporal), a worker when its ready file appears (it polls). Its CPU at that moment is read
from /proc. Our processes run twice: on the default catalog (built-ins only), and on a
catalog naming an MCP server, which loads the MCP SDK (no server listens: discovery fails
at once, and the start is what is timed). Rounds are interleaved; medians are printed with
their ratio to the baseline of the same kind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from app.platform.devserver_flags import TUNING_ARGS
from temporal_workflows import search_attributes
from tests.conftest import temporal_binary
from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[1]
READY_WITHIN_SECONDS = 60.0
TICKS = os.sysconf("SC_CLK_TCK")


def rows(temporal: str, work: Path) -> dict[str, tuple[str, list[str]]]:
    """Name → (kind, the interpreter's arguments); `{port}` / `{ready}` filled per start."""
    catalog = work / "mcp-catalog.yaml"
    catalog.write_text(
        f"mcpServers:\n  - {{id: tools, url: 'http://127.0.0.1:{free_port()}/mcp', tools: [t]}}\n"
    )
    ours = ["-m", "app.cli"]
    common = ["--temporal-address", temporal, "--task-queue", f"start-{uuid.uuid4()}"]
    with_mcp = ["--executors-file", str(catalog)]
    return {
        "API written by hand (baseline)": (
            "api", ["-m", "bench.bare_servers", "api", "--temporal", temporal, "--port", "{port}"]
        ),
        "trellis api": ("api", [*ours, "api", *common, "--api-port", "{port}"]),
        "trellis api, MCP server in the catalog": (
            "api", [*ours, "api", *common, *with_mcp, "--api-port", "{port}"]
        ),
        "worker written by hand (baseline)": (
            "worker",
            ["-m", "bench.bare_servers", "worker", "--temporal", temporal,
             "--ready-file", "{ready}"],
        ),
        "trellis worker": ("worker", [*ours, "worker", *common, "--ready-file", "{ready}"]),
        "trellis worker, MCP server in the catalog": (
            "worker", [*ours, "worker", *common, *with_mcp, "--ready-file", "{ready}"]
        ),
    }  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """User + system CPU a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_once(kind: str, args: list[str], work: Path) -> tuple[float, float]:
    """(wall s, CPU s) from spawn until the process is ready; it is stopped after."""
    port, ready = free_port(), work / f"{uuid.uuid4().hex}.ready"
    data_dir = Path(tempfile.mkdtemp(dir=work))
    argv = [a.format(port=port, ready=ready) for a in args]
    if argv[:2] == ["-m", "app.cli"]:
        argv += ["--data-dir", str(data_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "starts.log").open("ab"),
    )
    try:
        while not _ready(kind, port, ready):
            if process.poll() is not None or time.perf_counter() - started > READY_WITHIN_SECONDS:
                tail = (work / "starts.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{argv} did not start:\n{tail}")
            time.sleep(0.01)
        return time.perf_counter() - started, cpu_seconds(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _ready(kind: str, port: int, ready: Path) -> bool:
    if kind == "worker":
        return ready.exists()
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


async def measure(runs: int, warm_up: bool = True) -> dict[str, tuple[str, float, float]]:
    """Name → (kind, median wall s, median CPU s) over `runs` interleaved rounds."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
    )
    try:
        with tempfile.TemporaryDirectory(prefix="trellis-start-") as tmp:
            work = Path(tmp)
            table = rows(env.client.service_client.config.target_host, work)
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in table}
            for kind, args in table.values() if warm_up else ():  # file cache, .pyc files
                await asyncio.to_thread(start_once, kind, args, work)
            for _ in range(runs):
                for name, (kind, args) in table.items():
                    samples[name].append(await asyncio.to_thread(start_once, kind, args, work))
    finally:
        await env.shutdown()
    return {
        name: (
            table[name][0],
            statistics.median(w for w, _ in got),
            statistics.median(c for _, c in got),
        )
        for name, got in samples.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="skip the untimed first start of each row"
    )
    args = parser.parse_args(argv)
    results = asyncio.run(measure(args.runs, warm_up=not args.no_warm_up))
    baselines: dict[str, tuple[float, float]] = {}
    for kind, wall, cpu in results.values():
        baselines.setdefault(kind, (wall, cpu))  # each kind's first row is its baseline
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'process, until ready':<44} {'wall ms':>8} {'cpu ms':>8} {'wall x':>7} {'cpu x':>7}")
    for name, (kind, wall, cpu) in results.items():
        base_wall, base_cpu = baselines[kind]
        print(
            f"{name:<44} {wall * 1000:8.0f} {cpu * 1000:8.0f}"
            f" {wall / base_wall:7.2f} {cpu / base_cpu:7.2f}"
        )


if __name__ == "__main__":
    main()
