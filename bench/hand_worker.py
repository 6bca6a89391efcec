"""The hand-written baseline's worker, in its own process like ours.

Run by the benchmark: `python -m bench.hand_worker --temporal ADDR --task-queue Q
--mcp-url URL --agent-url URL --ready-file F`. One MCP session (official `mcp` SDK) and
one A2A client (`a2a-sdk`) for the whole worker; the same concurrency and connection
limits as ours.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from mcp import Client as McpClient
from temporalio.client import Client
from temporalio.worker import Worker

from activities.executors.a2a import CONNECTION_LIMITS
from app.worker import WORKER_LIMITS
from bench.handwritten import WORKFLOWS, HandActivities


async def serve(args: argparse.Namespace) -> None:
    client = await Client.connect(args.temporal)
    async with (
        McpClient(args.mcp_url) as mcp,
        httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), limits=CONNECTION_LIMITS) as http,
    ):
        card = await A2ACardResolver(http, args.agent_url).get_agent_card()
        a2a = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        activities = HandActivities(mcp, a2a)
        worker = Worker(
            client,
            task_queue=args.task_queue,
            workflows=WORKFLOWS,
            activities=activities.all(),
            **WORKER_LIMITS,
        )
        async with worker:
            args.ready_file.write_text("ready\n")
            await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--temporal", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--mcp-url", required=True)
    parser.add_argument("--agent-url", required=True)
    parser.add_argument("--ready-file", type=Path, required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
