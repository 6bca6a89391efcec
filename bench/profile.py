"""Where the time goes: py-spy on the API and the worker processes while a workload runs.

Run: `python -m bench.profile [--workload W] [--seconds 20] [--top 25]`, W one of
WORKLOADS (below; mcp-polled: the mcp workload followed by polling the run detail).
Needs `py-spy` (PyPI; the lock has it, so ./scripts/bootstrap installs it) and permission
to trace (root, or ptrace_scope 0). Prints, per
process, the functions with the most samples on the CPU: own ("self") and inclusive
("total"), in percent of that process's samples; `--out DIR` keeps the raw stacks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench import scenarios as sc
from bench.live import approve_one, run_over_sse, run_polling, run_via_temporal
from bench.measure import throughput
from bench.reads import wrk
from bench.stack import Stack, bench_stack

RATE = 250
WORKLOADS = (
    "mcp", "mcp-polled", "delay", "fanout", "echo", "mcp-runs", "a2a-runs", "reads", "approvals"
)  # fmt: skip
PROCS = ("api", "worker")


def py_spy() -> str | None:
    """py-spy on PATH, or beside this Python (a venv's bin)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


async def _workload(stack: Stack, name: str, seconds: float) -> str:
    """Keep the platform busy for `seconds`; a line saying what ran."""
    deadline = time.monotonic() + seconds
    if name == "reads":
        wf = await stack.create(sc.sequence(20, sc.MCP_ECHO))
        _, run_id = await run_over_sse(stack, wf)
        url = f"{stack.api_url}/api/v1/workflows/{wf}/runs/{run_id}"
        result = await wrk(url, seconds)
        return f"wrk, 50 clients, run detail of 20 MCP steps: {result.rps:,.0f} req/s"
    if name == "fanout":
        wf = await stack.create(sc.parallel(50, sc.MCP_ECHO))
        runs = 0
        while time.monotonic() < deadline:
            await run_over_sse(stack, wf)
            runs += 1
        return f"{runs} runs of one 50-way parallel block of MCP echo steps, one at a time"
    if name == "approvals":
        wf = await stack.create(sc.GATED)
        runs = 0
        while time.monotonic() < deadline:
            await approve_one(stack, wf)
            runs += 1
        return f"{runs} gated runs, one at a time: started, held at the gate, approved"
    if name in ("echo", "mcp-runs", "a2a-runs"):
        key = {"echo": sc.ECHO, "mcp-runs": sc.MCP_ECHO, "a2a-runs": sc.A2A_ECHO}[name]
        wf = await stack.create(sc.sequence(5, key))
        runs = 0
        while time.monotonic() < deadline:
            await throughput(lambda: run_via_temporal(stack, wf), 100, 50)
            runs += 100
        return f"{runs} runs x 5 {sc.LABEL[key]} steps, 50 in flight"
    key = sc.DELAY if name == "delay" else sc.MCP_ECHO
    wf = await stack.create(sc.sequence(20, key))
    polled = name == "mcp-polled"
    runs = 0
    while time.monotonic() < deadline:
        await (run_polling if polled else run_over_sse)(stack, wf)
        runs += 1
    how = "by polling the run detail" if polled else "over SSE"
    return f"{runs} runs x 20 sequential {sc.LABEL[key]} steps, one at a time, {how}"


async def profile(name: str, seconds: float, out: Path, gil: bool = True) -> str:
    spy = py_spy()
    assert spy is not None
    async with bench_stack(out) as stack:
        wf = await stack.create(sc.sequence(5, sc.MCP_ECHO))
        for _ in range(3):  # warm up both processes
            await run_over_sse(stack, wf)
        spies = [
            await _spy(spy, stack.pids[proc], seconds, out / f"{proc}.txt", gil) for proc in PROCS
        ]
        what = await _workload(stack, name, seconds)
        for recorder in spies:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(recorder.wait(), seconds + 30)
    return what


async def _spy(
    spy: str, pid: int, seconds: float, output: Path, gil: bool
) -> asyncio.subprocess.Process:
    args = ["record", "--pid", str(pid), "--rate", str(RATE), "--duration", str(round(seconds))]
    args += ["--format", "raw", "--nonblocking", "--output", str(output)]
    if gil:  # only samples that hold the GIL: Python actually running, not threads waiting
        args.append("--gil")
    return await asyncio.create_subprocess_exec(
        spy, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )


def summarize(path: Path, top: int) -> list[str]:
    """The functions with the most own and inclusive samples in py-spy's raw output."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        samples += n
        frames = [_frame(f) for f in stack.split(";")]
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    if not samples:
        return ["  (no samples)"]
    lines = [f"  {samples} samples at {RATE}/s ({samples / RATE:.1f} s on CPU)", "  self:"]
    lines += [f"    {n * 100 / samples:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines.append("  total, our code (inclusive):")
    ours = [(f, n) for f, n in total.most_common() if _is_ours(f)]
    lines += [f"    {n * 100 / samples:5.1f}%  {f}" for f, n in ours[:top]]
    lines.append("  total, libraries (inclusive):")
    libs = [(f, n) for f, n in total.most_common() if any(lib in f for lib in LIBRARIES)]
    lines += [f"    {n * 100 / samples:5.1f}%  {f}" for f, n in libs[:top]]
    return lines


OURS = ("(activities/", "(app/", "(temporal_workflows/")
# Library entry points worth seeing inclusive (what our code spends its time under).
LIBRARIES = (
    "(temporalio/worker/_workflow.py", "(temporalio/worker/_activity.py",
    "(temporalio/worker/workflow_sandbox/", "(temporalio/converter", "(temporalio/contrib/",
    "(temporalio/bridge/", "(mcp/", "(a2a/", "(aiosqlite/", "(pydantic/", "(fastapi/",
    "(starlette/", "(uvicorn/", "(sse_starlette/", "(httpx", "(json/", "(importlib",
)  # fmt: skip


def _is_ours(frame: str) -> bool:
    return any(marker in frame for marker in OURS)


def _frame(frame: str) -> str:
    """`function (path/to/file.py:123)` without the line number and the site-packages prefix."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/lib/python3"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})" if where else name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload",
        choices=WORKLOADS,
        default="mcp",
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, help="keep the raw py-spy stacks here")
    parser.add_argument(
        "--all-threads", action="store_true", help="sample every thread, GIL or not (as before)"
    )
    args = parser.parse_args(argv)
    if py_spy() is None:
        raise SystemExit("py-spy is not installed: ./scripts/bootstrap installs it")
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="trellis-profile-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        what = asyncio.run(profile(args.workload, args.seconds, out, gil=not args.all_threads))
        print(f"workload: {what}; {args.seconds:.0f} s")
        for proc in PROCS:
            print(f"\n{proc} process:")
            print("\n".join(summarize(out / f"{proc}.txt", args.top)))


if __name__ == "__main__":
    main()
