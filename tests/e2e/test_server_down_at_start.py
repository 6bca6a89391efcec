"""An MCP server down when the platform starts is asked again when a definition names one
of its tools: it may be up by then, and the next refresh may be a minute away."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import CatalogFile, McpServerSpec
from activities.executors.registry import ExecutorRegistry
from tests.builders import step
from tests.peers.mcp_server import build_mcp_server
from tests.peers.serving import ServedApp, free_port
from tests.support.platform import Platform, running_platform


@asynccontextmanager
async def _server_up_after_start(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Platform]:
    """A platform whose catalog saw its one MCP server ("late") down at start, an hour
    before its next refresh; the server is up once the platform is."""
    port = free_port()
    spec = McpServerSpec(id="late", url=f"http://127.0.0.1:{port}/mcp")
    catalog = Catalog(CatalogFile(servers=(spec,)), refresh_seconds=3600)
    await catalog.start()
    assert catalog.servers()[0].status == "down"
    registry = ExecutorRegistry(catalog)
    served = ServedApp(build_mcp_server().streamable_http_app(), port=port).start()
    try:
        async with running_platform(temporal_env.client, tmp_path, registry) as platform:
            yield platform
    finally:
        await registry.close()
        await catalog.close()
        served.stop()


async def test_a_tool_of_a_server_that_came_up_after_start_is_saved_and_runs(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with _server_up_after_start(temporal_env, tmp_path) as platform:
        run = await platform.run({"nodes": [step("Add", "add", {"a": 2, "b": 3})]})

    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["outputSnapshot"] == {"total": 5}


async def test_the_servers_list_asks_again_on_demand(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with _server_up_after_start(temporal_env, tmp_path) as platform:
        # Up since the last refresh, an hour away: the list shows what it last saw...
        (late,) = (await platform.api.get("/api/v1/servers")).json()
        assert late["status"] == "down"
        # ...until asked to look again.
        (late,) = (await platform.api.get("/api/v1/servers?refresh=true")).json()
        assert late["status"] == "up", late
        assert "add" in {tool["name"] for tool in late["tools"]}
        assert (await platform.api.get("/api/v1/agents?refresh=true")).json() == []
        refused = await platform.api.get("/api/v1/servers?refresh=maybe")
        assert refused.status_code == 400, refused.text


async def test_a_tool_added_to_a_running_server_is_saved_and_runs(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # The server answered its listing an hour before the next refresh; the tool came
    # after: a definition naming it was refused ("offers no tool") until that refresh.
    server = build_mcp_server()
    served = ServedApp(server.streamable_http_app()).start()
    spec = McpServerSpec(id="growing", url=f"{served.base_url}/mcp")
    catalog = Catalog(CatalogFile(servers=(spec,)), refresh_seconds=3600)
    await catalog.start()
    registry = ExecutorRegistry(catalog)

    def late_tool(q: str) -> str:
        return f"late:{q}"

    try:
        async with running_platform(temporal_env.client, tmp_path, registry) as platform:
            server.add_tool(late_tool, name="late_tool")
            run = await platform.run({"nodes": [step("Late", "growing/late_tool", {"q": "x"})]})
    finally:
        await registry.close()
        await catalog.close()
        served.stop()

    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["outputSnapshot"] == {"result": "late:x"}
