"""`trellis api --api-workers N`: N API processes share the port and the store."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.platform.conftest import alive, api_processes, child_pids, cmdline


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
