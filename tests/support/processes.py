"""`trellis api` / `trellis worker` as real processes against the session's Temporal server.

Fault and shutdown tests kill and restart them (SIGKILL, SIGTERM) the way a supervisor
would: same port, same data dir, same store. Output goes to a log file per process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.listening import group_listens_on
from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]


def process_env(data_dir: Path, temporal_address: str, **extra: str) -> dict[str, str]:
    """Our environment minus TRELLIS_*, pointed at one data dir, Temporal and task queue."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    env.update(
        TRELLIS_DATA_DIR=str(data_dir),
        TRELLIS_TEMPORAL_ADDRESS=temporal_address,
        TRELLIS_TASK_QUEUE=f"tq-{uuid.uuid4()}",
        TRELLIS_RECONCILE_INTERVAL_SECONDS="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@dataclass
class TrellisProcess:
    role: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]
    ready_file: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.running():
            self.process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would; returns once it is gone."""
        self.signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self, timeout: float = 60.0) -> tuple[int, float]:
        """SIGTERM; the exit code and how long it took to exit."""
        began = time.monotonic()
        self.signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        return code, time.monotonic() - began

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Processes:
    """Every process a test starts; all are killed when the test ends."""

    directory: Path
    started: list[TrellisProcess] = field(default_factory=list)

    def _spawn(self, role: str, args: list[str], env: dict[str, str]) -> TrellisProcess:
        return self.spawn(role, [sys.executable, "-m", "app.cli", *args], env)

    def spawn(self, role: str, argv: list[str], env: dict[str, str]) -> TrellisProcess:
        """Any process, in its own session, killed with the others at the end."""
        # A unique name: processes spawned side by side (threads) wrote one another's log.
        log = self.directory / f"{role}-{len(self.started)}-{uuid.uuid4().hex[:8]}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                env=env,
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        found = TrellisProcess(role, env, log, process)
        self.started.append(found)
        return found

    def worker(
        self, env: dict[str, str], within: float = 60.0, ready: Path | None = None
    ) -> TrellisProcess:
        """A worker, once it polls its task queue (once `ready` exists; a fresh file by default)."""
        ready = ready or self.directory / f"worker-{uuid.uuid4().hex[:8]}.ready"
        worker = self._spawn("worker", ["worker", "--ready-file", str(ready)], env)
        worker.ready_file = ready
        deadline = time.monotonic() + within
        while not ready.exists():
            if not worker.running() or time.monotonic() > deadline:
                raise AssertionError(f"worker not ready:\n{worker.output()}")
            time.sleep(0.05)
        return worker

    def api(self, env: dict[str, str], port: int | None = None, within: float = 60.0) -> Api:
        """An API on `port` (a free one by default), once `/readyz` answers 200."""
        port = port or free_port()
        env = {**env, "TRELLIS_API_PORT": str(port)}
        api = Api(self._spawn("api", ["api"], env), f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + within
        while True:
            try:
                ready = httpx.get(f"{api.url}/readyz", timeout=2).status_code == 200
                if ready and group_listens_on(api.process.pid, port):
                    return api
            except httpx.HTTPError:
                pass
            if not api.process.running() or time.monotonic() > deadline:
                raise AssertionError(f"API not ready on {port}:\n{api.process.output()}")
            time.sleep(0.05)

    async def api_and_worker(self, env: dict[str, str]) -> Api:
        """An API and a worker on `env`, started at once; the API once both are ready."""
        api, _ = await asyncio.gather(
            asyncio.to_thread(self.api, env), asyncio.to_thread(self.worker, env)
        )
        return api

    async def api_and_metered_worker(
        self, data_dir: Path, temporal_address: str
    ) -> tuple[Api, str]:
        """`api_and_worker` on a fresh environment whose worker serves its metrics: the API
        and the URL of the worker's /metrics."""
        port = free_port()
        env = process_env(data_dir, temporal_address, TRELLIS_WORKER_METRICS_PORT=str(port))
        return await self.api_and_worker(env), f"http://127.0.0.1:{port}/metrics"

    def kill_all(self) -> None:
        for found in self.started:
            if found.running():
                try:
                    os.killpg(found.pid, signal.SIGKILL)
                except OSError:
                    pass
                found.process.wait(10)


@dataclass
class Api:
    process: TrellisProcess
    url: str

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.kill_all()
