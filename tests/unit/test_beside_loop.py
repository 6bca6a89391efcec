"""Work beside the event loop (app/services/beside_loop.py): results, errors, one at a time,
and a process that stops without waiting for a job nobody waits for."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading
import time

import pytest

from app.services.beside_loop import beside_the_loop
from tests.platform.conftest import REPO


async def test_a_job_gives_its_result_or_its_error_while_the_loop_goes_on() -> None:
    # The job waits for the loop to tick three times: it returns only if the loop ran
    # meanwhile (a count of ticks over wall time failed when the test process stalled).
    ticked = threading.Event()

    async def tick() -> None:
        for _ in range(3):
            await asyncio.sleep(0.01)
        ticked.set()

    ticking = asyncio.create_task(tick())
    try:
        assert await beside_the_loop(lambda a, b: (ticked.wait(30), a + b), 2, 3) == (True, 5)
        with pytest.raises(ValueError, match="bad"):
            await beside_the_loop(lambda: (_ for _ in ()).throw(ValueError("bad")))
    finally:
        ticking.cancel()


async def test_jobs_run_one_at_a_time() -> None:
    spans: list[tuple[float, float]] = []

    def job() -> None:
        began = time.monotonic()
        time.sleep(0.1)
        spans.append((began, time.monotonic()))

    await asyncio.gather(*(beside_the_loop(job) for _ in range(3)))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans


def test_a_process_stops_without_waiting_for_an_abandoned_job() -> None:
    # On an executor's thread, an API told to stop waited for a check whose request had
    # gone (Python joins executor threads at exit).
    script = (
        "import asyncio, time\n"
        "from app.services.beside_loop import beside_the_loop\n"
        "async def main():\n"
        "    job = asyncio.create_task(beside_the_loop(time.sleep, 20))\n"
        "    await asyncio.sleep(0.2)\n"
        "    job.cancel()\n"
        "asyncio.run(main())\n"
    )
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, timeout=30)
    assert time.monotonic() - began < 10
