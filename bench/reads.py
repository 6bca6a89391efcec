"""Reads under load: `wrk` (Debian package `wrk`) at 50 connections against the API."""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass

CLIENTS = 50
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass
class WrkResult:
    p50: float
    p99: float
    rps: float
    errors: int


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


async def wrk(url: str, seconds: float, clients: int = CLIENTS, threads: int = 2) -> WrkResult:
    """Run wrk against one URL; latencies in ms."""
    proc = await asyncio.create_subprocess_exec(
        "wrk", f"-t{threads}", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--latency", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return parse_wrk(out.decode())


def parse_wrk(text: str) -> WrkResult:
    """The 50 % and 99 % latencies, requests/s and non-2xx/socket errors of wrk's report."""

    def latency(pct: str) -> float:
        found = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if found is None:
            raise RuntimeError(f"wrk printed no {pct}% latency:\n{text}")
        return float(found.group(1)) * _UNITS[found.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text
    )
    errors = int(non2xx.group(1)) if non2xx else 0
    if sockets:
        errors += sum(int(g) for g in sockets.groups())
    return WrkResult(
        p50=latency("50"), p99=latency("99"), rps=float(rps.group(1)) if rps else 0.0,
        errors=errors,
    )  # fmt: skip
