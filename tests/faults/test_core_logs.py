"""While Temporal is down, the worker's log stays in the format it was asked for.

The SDK's Rust core retries every call to an unreachable server and says so at WARN. Left
to its defaults it wrote those lines itself, straight to stderr as ANSI-coloured text:
with `TRELLIS_LOG_FORMAT=json` a log shipper met non-JSON lines exactly during an outage,
and they bypassed the secret masking every other line goes through.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from app.temporal_runtime import CORE_LOGGER
from tests.support.own_temporal import own_temporal, start_temporal
from tests.support.processes import Processes, TrellisProcess, process_env


def wait_for_output(process: TrellisProcess, text: str, within: float) -> None:
    deadline = time.monotonic() + within
    while text not in process.output():
        assert time.monotonic() < deadline, f"no {text!r} within {within}s:\n{process.output()}"
        time.sleep(0.2)


async def test_the_sdks_retry_warnings_during_a_temporal_outage_are_json_lines(
    tmp_path: Path, processes: Processes
) -> None:
    db_file = tmp_path / "temporal.db"
    temporal, port = await own_temporal(processes, db_file)
    address = f"127.0.0.1:{port}"
    worker = processes.worker(process_env(tmp_path, address, TRELLIS_LOG_FORMAT="json"))

    temporal.kill()
    # The worker's pollers retry the dead server; the core warns after a few attempts.
    wait_for_output(worker, "retried", within=60)
    await start_temporal(processes, port, db_file)

    lines = [line for line in worker.output().splitlines() if line.strip()]
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    retries = [e for e in entries if e["logger"] == CORE_LOGGER and "retried" in e["message"]]
    assert retries, entries
    assert retries[0]["level"] == "WARNING"
    assert worker.running()
