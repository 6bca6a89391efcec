"""A worker's ready file is its own: after `kill -9` of `trellis dev` and a restart, the old
worker's clean-up never removes the file the new worker wrote."""

from __future__ import annotations

import signal
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.support.processes import Processes, TrellisProcess, process_env


def stop(worker: TrellisProcess) -> None:
    worker.signal(signal.SIGTERM)
    assert worker.process.wait(timeout=60) == 0, worker.output()


def test_an_older_workers_exit_leaves_the_newer_workers_ready_file(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(tmp_path, temporal_env.client.service_client.config.target_host)
    ready = tmp_path / "worker.ready"
    older = processes.worker(env, ready=ready)
    ready.unlink()  # what a restarted `trellis dev` does before it starts its worker
    newer = processes.worker(env, ready=ready)
    newers = ready.read_text()

    stop(older)  # the old one finishes its shutdown only now
    assert ready.read_text() == newers

    stop(newer)  # its own file it does remove
    assert not ready.exists()
