"""`trellis api --api-workers N`: N API processes share the port and the store."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from tests.platform.conftest import alive, api_processes, child_pids, cmdline
from tests.support.processes import Processes, process_env


def test_two_api_workers_share_the_port_and_the_store_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    # Temporal is not needed for definitions: the API starts and serves reads without it.
    with api_processes(tmp_path, workers=2) as (api, url), httpx.Client(base_url=url) as client:
        workers = [p for p in child_pids(api.pid) if "spawn_main" in cmdline(p)]
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
        assert not any(alive(p) for p in workers)  # SIGTERM stops the workers too


async def test_api_workers_log_as_one_api_does_and_load_the_saved_cel_parser(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    # uvicorn starts each from an import: before app.api_process, they logged in uvicorn's
    # own text format whatever TRELLIS_LOG_FORMAT said, and built CEL's parser anew.
    cache_home = tmp_path / "cache"
    env = process_env(
        tmp_path / "data",
        temporal_env.client.service_client.config.target_host,
        TRELLIS_API_WORKERS="2",
        TRELLIS_LOG_FORMAT="json",
        TRELLIS_LOG_LEVEL="debug",
        XDG_CACHE_HOME=str(cache_home),
    )
    api = processes.api(env)
    async with httpx.AsyncClient(base_url=api.url) as client:
        for _ in range(6):
            assert (await client.get("/api/v1/workflows")).status_code == 200
    code, _ = api.process.stop()
    assert code == 0

    lines = [json.loads(line) for line in api.process.output().splitlines() if line.strip()]
    access = [e for e in lines if e["logger"] == "uvicorn.access"]
    assert sum(e.get("path") == "/api/v1/workflows" for e in access) == 6
    started = [e for e in lines if e["message"].startswith("Started server process")]
    assert len(started) == 2
    # `trellis api` builds and saves it before it starts them; they load it.
    parsers = [e["message"] for e in lines if e["message"].startswith("CEL's parser")]
    assert parsers == ["CEL's parser: built and saved"] + ["CEL's parser: loaded"] * 2


def test_api_workers_die_with_a_sigkilled_parent_and_free_the_port(tmp_path: Path) -> None:
    # They outlived it (re-parented to init, still answering on the port): its restart
    # failed "port … is already in use", and its metrics directory stayed in /tmp.
    with api_processes(tmp_path, workers=2) as (api, url):
        port = url.rsplit(":", 1)[1]
        workers = [p for p in child_pids(api.pid) if "spawn_main" in cmdline(p)]
        assert len(workers) == 2
        metrics_dir = Path(environ(workers[0])["PROMETHEUS_MULTIPROC_DIR"])
        assert metrics_dir.is_dir()
        api.kill()
        api.wait()
        deadline = time.monotonic() + 5
        while any(alive(p) for p in workers):
            assert time.monotonic() < deadline, "the API processes outlived their parent"
            time.sleep(0.1)
    # Started again on the same port, it serves; it removed the dead one's directory.
    with api_processes(tmp_path, workers=2, TRELLIS_API_PORT=port) as (_, again):
        assert httpx.get(f"{again}/healthz").status_code == 200
        assert not metrics_dir.exists()


def environ(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode().split("=", 1) for e in entries if b"=" in e)
