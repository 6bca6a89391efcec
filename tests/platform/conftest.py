"""`trellis` run as a real subprocess: environment, start/stop, and the processes it leaves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "Trellis is ready."


def trellis_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """Our environment minus any TRELLIS_* setting, with a private data dir and free ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    env.update(
        TRELLIS_DATA_DIR=str(data_dir),
        TRELLIS_API_PORT=str(free_port()),
        TRELLIS_TEMPORAL_PORT=str(free_port()),
        TRELLIS_UI_PORT=str(free_port()),
        TRELLIS_TEMPORAL_HTTP_API_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_trellis(
    args: list[str], env: dict[str, str], timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    """Run a `trellis` command to completion (for commands that fail fast)."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid`, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces; fields after its closing paren are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


@contextmanager
def api_processes(
    data_dir: Path, workers: int, within: float = 60.0, **extra: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`trellis api --api-workers N` (no Temporal needed), answering `/healthz`: the
    process and its URL (`extra`: more variables, `TRELLIS_API_PORT` say). It runs in its
    own process group, killed at the end whatever the outcome, so no uvicorn worker
    outlives the test."""
    env = trellis_env(data_dir, TRELLIS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}", **extra)
    url = f"http://127.0.0.1:{env['TRELLIS_API_PORT']}"
    api = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--api-workers", str(workers)],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + within
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the API did not answer"
            time.sleep(0.1)
        yield api, url
    finally:
        if api.poll() is None:
            api.kill()
            api.wait()
        try:
            os.killpg(api.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class DevProcess:
    """A running `trellis dev` with its output captured line by line."""

    env: dict[str, str]
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, env: dict[str, str]) -> DevProcess:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "dev"],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        dev = cls(env, process)
        threading.Thread(target=dev._read, daemon=True).start()
        return dev

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.env['TRELLIS_API_PORT']}"

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.env['TRELLIS_TEMPORAL_PORT']}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while READY_LINE not in self.lines:
            if self.process.poll() is not None:
                raise AssertionError(f"trellis dev exited early:\n{self.output}")
            if time.monotonic() > deadline:
                raise AssertionError(f"trellis dev not ready in {timeout}s:\n{self.output}")
            time.sleep(0.05)

    def children(self) -> dict[str, int]:
        """The supervised processes by role (temporal, worker, api)."""
        roles = {}
        for pid in child_pids(self.process.pid):
            line = cmdline(pid)
            if "start-dev" in line:
                roles["temporal"] = pid
            elif "app.cli worker" in line:
                roles["worker"] = pid
            elif "app.cli api" in line:
                roles["api"] = pid
        return roles

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig`, return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def kill_everything(self) -> None:
        """Last-resort cleanup so a failing test never leaves processes running."""
        pids = list(self.children().values())
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def dev_processes() -> Iterator[list[DevProcess]]:
    """Every `trellis dev` a test starts is killed at the end, whatever happened."""
    started: list[DevProcess] = []
    yield started
    for dev in started:
        dev.kill_everything()


@contextmanager
def running_dev(env: dict[str, str], within: float = 90.0) -> Iterator[DevProcess]:
    """`trellis dev` with `env`, ready; stopped and everything it started killed at the end
    (a module's one platform: the CLI test files share this)."""
    process = DevProcess.start(env)
    try:
        process.wait_ready(within)
        yield process
    finally:
        process.stop()
        process.kill_everything()
