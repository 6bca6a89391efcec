"""`trellis dev` supervision: a dying child stops everything; nothing outlives the supervisor."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from tests.platform.conftest import DevProcess, alive, trellis_env
from tests.support.server import free_port


def _wait_gone(pids: list[int], within: float = 15.0) -> list[int]:
    """The pids still alive after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_a_child_dying_stops_the_rest_and_exits_non_zero(
    tmp_path: Path, dev_processes: list[DevProcess]
) -> None:
    dev = DevProcess.start(trellis_env(tmp_path, TRELLIS_LOG_FORMAT="json"))
    dev_processes.append(dev)
    dev.wait_ready()
    children = dev.children()
    os.kill(children["worker"], signal.SIGKILL)
    assert dev.process.wait(30) == 1
    # The supervisor says so in the platform's log format, so a log shipper gets it too.
    said = [line for line in dev.output.splitlines() if "exited unexpectedly" in line]
    assert len(said) == 1, dev.output
    line = json.loads(said[0])
    assert line["level"] == "ERROR" and line["logger"] == "trellis.dev"
    assert line["message"].startswith("the worker process exited unexpectedly (code -9)")
    # The dev server logs JSON too, and its text banner is left out.
    assert "Temporal CLI" not in dev.output
    assert not [ln for ln in dev.lines if ln.startswith("time=")], dev.output
    for ln in dev.lines:
        if ln.startswith("{"):
            json.loads(ln)
    # Its last word too (it was the one text line on stderr).
    (stopped,) = [ln for ln in dev.lines if "Trellis stopped." in ln]
    assert json.loads(stopped)["message"] == "Trellis stopped.", dev.output
    assert _wait_gone(list(children.values())) == []


def test_sigkill_of_dev_takes_its_children_down(
    tmp_path: Path, dev_processes: list[DevProcess]
) -> None:
    dev = DevProcess.start(trellis_env(tmp_path))
    dev_processes.append(dev)
    dev.wait_ready()
    children = dev.children()
    dev.process.kill()
    dev.process.wait(10)
    assert _wait_gone(list(children.values())) == []


def test_dev_with_a_temporal_address_starts_no_dev_server(
    tmp_path: Path, dev_processes: list[DevProcess], temporal_env: WorkflowEnvironment
) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS=address, TRELLIS_TASK_QUEUE="tq-dev")
    dev = DevProcess.start(env)
    dev_processes.append(dev)
    dev.wait_ready()
    assert set(dev.children()) == {"worker", "api"}
    assert httpx.get(f"{dev.api_url}/readyz").status_code == 200
    assert f"Temporal:        {address} (external cluster)" in dev.output
    assert dev.stop() == 0


def _temporal_metrics_served(port: int) -> None:
    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics")
    assert metrics.status_code == 200
    assert "service_requests" in metrics.text  # the Temporal server's own, not ours


def test_dev_killed_and_started_again_at_once_with_worker_metrics_comes_back(
    tmp_path: Path, dev_processes: list[DevProcess]
) -> None:
    # The old worker, told to stop by its supervisor's death, drained its in-flight step
    # for its whole shutdown grace holding the metrics port: the new `trellis dev` found it
    # taken and refused to start.
    # The dev server's own /metrics on a port set, as a scrape configuration names it: it
    # was a free port the dev server picked at each start.
    temporal_metrics = free_port()
    env = trellis_env(
        tmp_path,
        TRELLIS_WORKER_METRICS_PORT=str(free_port()),
        TRELLIS_TEMPORAL_METRICS_PORT=str(temporal_metrics),
    )
    dev = DevProcess.start(env)
    dev_processes.append(dev)
    dev.wait_ready()
    assert f"http://127.0.0.1:{temporal_metrics}/metrics (Temporal)" in dev.output
    _temporal_metrics_served(temporal_metrics)
    old_worker = dev.children()["worker"]
    body = {
        "name": "slow",
        "nodes": [
            {
                "name": "wait",
                "nodeType": "step",
                "executorKey": "builtin:delay",
                # Longer than a loaded machine takes to start `trellis dev` again (8 s was
                # not: the old worker had drained and gone before the new one was ready).
                "config": {"seconds": 20},
            }
        ],
    }
    api = f"{dev.api_url}/api/v1/workflows"
    wf = httpx.post(api, json=body).json()["id"]
    assert httpx.post(f"{api}/{wf}/toggle", json={"enabled": True}).status_code == 200
    run_id = httpx.post(f"{api}/{wf}/runs", json={}).json()["runId"]
    deadline = time.monotonic() + 15
    while httpx.get(f"{api}/{wf}/runs/{run_id}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    dev.process.kill()
    dev.process.wait(10)
    again = DevProcess.start(env)
    dev_processes.append(again)
    again.wait_ready()
    assert alive(old_worker), "the old worker should still be draining its step"
    _temporal_metrics_served(temporal_metrics)  # on the same port after the restart
    deadline = time.monotonic() + 60
    while httpx.get(f"{api}/{wf}/runs/{run_id}").json()["status"] != "completed":
        assert time.monotonic() < deadline, "the run did not complete after the restart"
        time.sleep(0.2)
    assert again.stop() == 0
