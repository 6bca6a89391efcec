"""A worker's ready file is its own: after `kill -9` of `trellis dev` and a restart, the old
worker's clean-up never removes the file the new worker wrote."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.platform.conftest import run_trellis, trellis_env
from tests.support.processes import Processes, TrellisProcess, process_env
from tests.support.server import free_port


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


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("missing/w.ready", "its directory {dir}/missing does not exist"),
        ("a-file/w.ready", "its directory {dir}/a-file is not a directory"),
        ("a-dir", "is a directory"),
        ("", "must not be empty"),
    ],
)
def test_a_ready_file_that_cannot_be_written_is_refused_at_start(
    tmp_path: Path, name: str, reason: str
) -> None:
    # A missing directory: the worker ran, never wrote the file and said nothing, so a
    # compose health check (`test -f`) never passed, with nothing saying why.
    (tmp_path / "a-file").write_text("")
    (tmp_path / "a-dir").mkdir()
    ready = str(tmp_path / name) if name else ""
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    done = run_trellis(["worker", "--ready-file", ready], env)
    assert done.returncode == 2, done.stderr
    expected = reason.format(dir=tmp_path)
    assert done.stderr == f"trellis worker: invalid value '{ready}' for --ready-file: {expected}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file"]  # nothing made


def test_a_ready_file_whose_write_fails_stops_the_worker_saying_why(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    # A name the file may have but its partial copy (`.NAME.PID`) may not: the directory
    # passes the start's check, the write fails once the worker polls.
    ready = tmp_path / ("w" * 250)
    env = process_env(tmp_path, temporal_env.client.service_client.config.target_host)
    worker = processes.spawn(
        "worker", [sys.executable, "-m", "app.cli", "worker", "--ready-file", str(ready)], env
    )
    assert worker.process.wait(timeout=60) == 1
    lines = worker.output().splitlines()
    assert any("ERROR" in line and "cannot write the ready file" in line for line in lines)
    assert lines[-1].startswith(
        f"trellis worker: cannot write the ready file {ready} (--ready-file): "
    )
