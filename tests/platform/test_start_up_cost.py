"""What makes `trellis api` and `trellis worker` start sooner, and that it leaves nothing
behind: the MCP SDK is loaded only where the catalog names an MCP server, and the garbage
collector, paused while a process starts (app/heap.py), runs again once it has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from temporalio.testing import WorkflowEnvironment

from tests.builders import delay
from tests.platform.conftest import REPO
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.processes import Processes
from tests.support.server import free_port

# Builds what `trellis api` and `trellis worker` build, from each catalog named in argv in
# turn ("-": none), and prints which of the MCP SDK's modules are loaded after each.
BUILD_BOTH = """
import asyncio, json, sys
from pathlib import Path
from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from app.main import create_app
from app.settings import Settings

async def main():
    for name in sys.argv[1:]:
        catalog = load_catalog(None if name == "-" else Path(name))
        await catalog.start()  # discovery, as both processes start it
        create_app(Settings(data_dir=Path(".")), catalog=catalog)
        registry = ExecutorRegistry(catalog)
        await registry.close()
        await catalog.close()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types"))
        print(json.dumps(loaded))

asyncio.run(main())
"""


def test_the_mcp_sdk_is_loaded_only_for_a_catalog_that_names_a_server(tmp_path: Path) -> None:
    agents_only = tmp_path / "agents.yaml"
    agents_only.write_text(
        f"a2aAgents:\n  - {{name: helper, url: 'http://127.0.0.1:{free_port()}/'}}\n"
    )
    with_server = tmp_path / "server.yaml"
    with_server.write_text(
        f"mcpServers:\n  - {{id: tools, url: 'http://127.0.0.1:{free_port()}/mcp', tools: [t]}}\n"
    )
    # One interpreter, in this order: what the first two load stays loaded for the third.
    done = subprocess.run(
        [sys.executable, "-c", BUILD_BOTH, "-", str(agents_only), str(with_server)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    none, agents, server = (json.loads(line) for line in done.stdout.splitlines())
    assert none == [] and agents == []
    assert "mcp" in server


def young_collections(metrics_text: str) -> float:
    """How many times the process's collector has collected its youngest generation."""
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == "python_gc_collections_total" and sample.labels == {
                "generation": "0"
            }:
                return sample.value
    raise AssertionError("python_gc_collections_total{generation='0'} is not served")


async def test_the_collector_runs_again_once_the_api_and_the_worker_have_started(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    api_process, worker_metrics = await processes.api_and_metered_worker(
        tmp_path, temporal_env.client.service_client.config.target_host
    )
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        api_before = young_collections((await api.get("/metrics")).text)
        worker_before = young_collections((await api.get(worker_metrics)).text)
        # Work that allocates in both: runs of twenty activity steps, each read many times.
        for _ in range(3):
            wf, run_id = await create_and_trigger(
                api, {"nodes": [delay(f"s{i}", 0) for i in range(20)]}
            )
            await wait_for(api, wf, run_id, lambda r: r["status"] == "completed")
            for _ in range(20):
                assert (await api.get(f"/api/v1/workflows/{wf}/runs/{run_id}/nodes")).is_success
        assert young_collections((await api.get("/metrics")).text) > api_before
        assert young_collections((await api.get(worker_metrics)).text) > worker_before
