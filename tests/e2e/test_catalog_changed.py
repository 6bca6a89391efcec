"""A catalog file that changed: since a definition was saved (the platform restarted with a
server gone), or while the platform runs (it keeps what it loaded, and says so)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.builders import step
from tests.peers.mcp_server import build_mcp_server
from tests.peers.serving import ServedApp, free_port
from tests.support.platform import Platform, running_platform


@asynccontextmanager
async def _platform_on(
    temporal_env: WorkflowEnvironment, data_dir: Path, catalog_text: str
) -> AsyncIterator[Platform]:
    """A platform on the store in `data_dir` whose catalog file says `catalog_text`."""
    path = data_dir / "executors.yaml"
    path.write_text(catalog_text, encoding="utf-8")
    catalog = load_catalog(path, refresh_seconds=3600)
    await catalog.start()
    registry = ExecutorRegistry(catalog)
    try:
        async with running_platform(temporal_env.client, data_dir, registry) as platform:
            yield platform
    finally:
        await registry.close()
        await catalog.close()


async def test_a_step_on_a_server_no_longer_in_the_catalog_says_so_at_run_and_at_save(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # An audit: the run failed blaming "MCP server(s) 'down-undeclared' did not answer,
    # so the tools they offer are unknown", a server the key does not name.
    served = ServedApp(build_mcp_server().streamable_http_app()).start()
    down = f"  - {{id: down-undeclared, url: 'http://127.0.0.1:{free_port()}/mcp'}}\n"
    before = f"mcpServers:\n  - {{id: jsonresp, url: '{served.base_url}/mcp'}}\n{down}"
    node = step("Echo", "jsonresp/echo", {"text": "x"})
    try:
        async with _platform_on(temporal_env, tmp_path, before) as platform:
            workflow_id = await platform.create({"nodes": [node]})
    finally:
        served.stop()

    gone = "unknown executorKey: no MCP server 'jsonresp' in the executor catalog"
    async with _platform_on(temporal_env, tmp_path, f"mcpServers:\n{down}") as platform:
        run = await platform.wait(workflow_id, await platform.trigger(workflow_id))
        saved = await platform.api.post(
            "/api/v1/workflows", json={"name": "again", "nodes": [node]}
        )

    [node_run] = run["nodeRuns"]
    assert run["status"] == "failed", run
    assert node_run["error"].startswith(f"{gone} (its servers are 'down-undeclared')"), node_run
    assert "did not answer" not in node_run["error"]
    assert saved.status_code == 400, saved.text
    message = saved.json()["error"]["message"]
    assert f"nodes[0] ('Echo'): {gone} (its servers are 'down-undeclared')" in message


async def test_a_catalog_file_edited_while_running_is_not_read_again_and_a_refresh_says_so(
    temporal_env: WorkflowEnvironment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An audit added an agent to the file: `?refresh=true` did not list it, a save naming
    # it was refused, and nothing said why.
    caplog.set_level(logging.WARNING, logger="activities.executors.catalog_source")
    agent = "a2aAgents:\n  - {{name: {}, url: 'http://127.0.0.1:{}/'}}\n"
    async with _platform_on(temporal_env, tmp_path, agent.format("first", free_port())) as p:
        path = tmp_path / "executors.yaml"
        path.write_text(path.read_text() + "  - {name: added, url: 'http://127.0.0.1:1/'}\n")
        for _ in range(2):  # one warning per change, not one per refresh
            listed = (await p.api.get("/api/v1/agents?refresh=true")).json()
            assert [a["name"] for a in listed] == ["first"]
        saved = await p.api.post(
            "/api/v1/workflows", json={"name": "w", "nodes": [step("A", "added")]}
        )
        assert saved.status_code == 400, saved.text

    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (
        f"executor catalog {path} has changed since this process read it at start; it keeps"
        " the catalog it loaded (a refresh asks the catalog's servers and agents again, not"
        " the file): restart the API and the worker to use the file as it is now"
    )
