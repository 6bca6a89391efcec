"""The start-up benchmark's baselines: an API and a worker written by hand with the
libraries ours use, and nothing of ours.

    python -m bench.bare_servers api --temporal ADDR --port P
    python -m bench.bare_servers worker --temporal ADDR --task-queue Q --ready-file F

The API is FastAPI on uvicorn with a Temporal client, connected at start, and a `/readyz`
that asks Temporal's health check, as ours does. The worker connects to Temporal and
polls a queue with one workflow and one activity, then creates its ready file.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from temporalio.client import Client
from temporalio.worker import Worker

from bench.bare_workflow import BareWorkflow, bare_step


def api(temporal: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.client = await Client.connect(temporal)
        yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        await app.state.client.service_client.check_health()
        return {"status": "ready"}

    return app


async def worker(temporal: str, task_queue: str, ready_file: Path) -> None:
    client = await Client.connect(temporal)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[BareWorkflow],
        activities=[bare_step],
    ):
        await asyncio.to_thread(ready_file.write_text, "ready\n")
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["api", "worker"])
    parser.add_argument("--temporal", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--task-queue", default="bare")
    parser.add_argument("--ready-file", type=Path)
    args = parser.parse_args()
    if args.role == "api":
        uvicorn.run(api(args.temporal), host="127.0.0.1", port=args.port, log_level="warning")
    else:
        asyncio.run(worker(args.temporal, args.task_queue, args.ready_file))


if __name__ == "__main__":
    main()
