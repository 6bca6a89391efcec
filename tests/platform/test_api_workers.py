"""`trellis api --api-workers N`: N API processes share the port and the store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.platform.conftest import REPO, child_pids, trellis_env
from tests.support.server import free_port

START_SECONDS = 60.0


def test_two_api_workers_share_the_port_and_the_store_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    # Temporal is not needed for definitions: the API starts and serves reads without it.
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    url = f"http://127.0.0.1:{env['TRELLIS_API_PORT']}"
    api = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--api-workers", "2"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Its own process group: a failing test still takes the uvicorn workers down with it.
        start_new_session=True,
    )
    try:
        with httpx.Client(base_url=url, timeout=5) as client:
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the API did not answer"
                time.sleep(0.1)
            workers = [p for p in child_pids(api.pid) if "spawn_main" in _cmd(p)]
            assert len(workers) == 2
            body = {
                "name": "shared",
                "nodes": [{"name": "a", "nodeType": "step", "executorKey": "builtin:echo"}],
            }
            created = client.post("/api/v1/workflows", json=body)
            assert created.status_code == 201
            # Every read, whichever process answers it, sees what one of them wrote.
            for _ in range(10):
                found = client.get(f"/api/v1/workflows/{created.json()['id']}")
                assert found.status_code == 200
        api.terminate()
        assert api.wait(timeout=20) == 0
        time.sleep(0.5)
        assert not any(_alive(p) for p in workers)  # SIGTERM stops the workers too
    finally:
        if api.poll() is None:
            api.kill()
            api.wait()
        # Whatever the outcome, no worker process outlives the test.
        try:
            os.killpg(api.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""
