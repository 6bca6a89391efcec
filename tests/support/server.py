"""Serve an ASGI app over real HTTP on 127.0.0.1 inside the test's event loop."""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

# Below the kernel's ephemeral ports (Linux 32768-60999, macOS 49152-65535).
PORTS = range(20_000, 32_000)


def free_port() -> int:
    """A free 127.0.0.1 port outside the ephemeral range. Tests stop servers and start them
    again on the same port; an ephemeral port freed by the stop can meanwhile become some
    outgoing connection's local port (seen: the dev server's restart refused "address
    already in use")."""
    for _ in range(100):
        port = random.choice(PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use
            return port
    raise RuntimeError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


@asynccontextmanager
async def serving(
    app: Any, port: int | None = None, graceful_seconds: float | None = None
) -> AsyncIterator[str]:
    """Run `app` under uvicorn until the block exits; yield its base URL.

    `graceful_seconds` bounds the shutdown: requests still open then are cancelled.
    """
    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        # Neither uvicorn's log config nor a level: either would change its loggers for
        # the rest of the session (tests/unit/test_logs.py reads uvicorn.access).
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=graceful_seconds,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
