"""A process frozen with SIGSTOP, known to be stopped before the test goes on.

The stop is not at once: each thread stops when the kernel next runs it, and on a loaded
machine a thread of a stopped dev server still answered a health check ~10 ms after the
signal (its state still "R"), so a /readyz meant to find Temporal hung found it serving.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOPPED = {"T", "t"}


@contextmanager
def frozen(pid: int, within: float = 10.0) -> Iterator[None]:
    """`pid` stopped (every thread of it) for the block, then let go on again."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + within
        while not all_threads_stopped(pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"process {pid} did not stop within {within} s")
            time.sleep(0.005)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def all_threads_stopped(pid: int) -> bool:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        # The state follows the command name, which is in parentheses and may hold spaces.
        states.append(stat.rpartition(")")[2].split()[0])
    return bool(states) and all(state in STOPPED for state in states)
