"""Per-step executor overhead: an MCP echo tool (streamable HTTP, shared session) vs builtin:echo.

Run: `python -m bench.executor_overhead [N]` from the repo root (starts its own MCP server).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

from activities.executors.base import StepCall
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import CatalogFile, McpServerSpec
from activities.executors.registry import ExecutorRegistry
from tests.peers.mcp_server import McpStats, build_mcp_server
from tests.peers.serving import ServedApp


def _call(key: str, i: int) -> StepCall:
    return StepCall(
        run_id="bench",
        workflow_id="bench",
        node_id=f"n{i}",
        node_name="echo",
        node_run_id=f"nr{i}",
        executor_key=key,
        a2a_pool=[],
        config={"text": f"hello {i}"},
        context={"input": {}},
    )


async def _time(registry: ExecutorRegistry, key: str, n: int, reconnect: bool = False) -> float:
    await registry.execute(_call(key, -1))  # connect / warm up outside the measurement
    started = time.perf_counter()
    for i in range(n):
        await registry.execute(_call(key, i))
        if reconnect:  # what every step would pay without shared sessions
            await registry.catalog.sessions.get("bench").reset()
    return (time.perf_counter() - started) / n * 1000


async def main(n: int) -> None:
    logging.disable(logging.WARNING)
    stats = McpStats()
    served = ServedApp(build_mcp_server(stats).streamable_http_app()).start()
    spec = McpServerSpec(id="bench", url=f"{served.base_url}/mcp", tools=("echo",))
    registry = ExecutorRegistry(Catalog(CatalogFile(servers=(spec,))))
    try:
        builtin_ms = await _time(registry, "builtin:echo", n)
        mcp_ms = await _time(registry, "echo", n)
        fresh_ms = await _time(registry, "echo", max(n // 10, 10), reconnect=True)
    finally:
        await registry.close()
        served.stop()
    print(f"calls per executor: {n} (server in this process, so both sides share one CPU)")
    print(f"builtin:echo                 {builtin_ms:8.3f} ms/call")
    print(f"MCP echo, shared session     {mcp_ms:8.3f} ms/call")
    print(f"MCP echo, connect every call {fresh_ms:8.3f} ms/call")
    print(f"ratio MCP/builtin: {mcp_ms / builtin_ms:,.0f}x")
    print(f"MCP overhead per step: {mcp_ms - builtin_ms:.3f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
