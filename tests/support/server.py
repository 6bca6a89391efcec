"""Serve an ASGI app over real HTTP on 127.0.0.1 inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from app.http_protocol import BoundedHttpToolsProtocol

# Below the kernel's ephemeral ports (Linux 32768-60999, macOS 49152-65535).
PORTS = range(20_000, 32_000)
# Ports this process handed out: none is handed out twice.
_given: set[int] = set()


def own_ports() -> range:
    """This process's share of PORTS. pytest-xdist's workers (gw0, gw1, ...) each draw from
    their own slice: a port one of them picked, but has not bound yet, looks free to the
    others (seen: `trellis dev` found another test's API answering on the port it was
    given, then could not bind it)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    index = int(worker[2:]) if worker[:2] == "gw" and worker[2:].isdigit() else 0
    size = len(PORTS) // max(count, 1)
    return range(PORTS.start + index * size, PORTS.start + (index + 1) * size)


def free_port() -> int:
    """A free 127.0.0.1 port outside the ephemeral range, never handed out before by this
    process. Tests stop servers and start them again on the same port; an ephemeral port
    freed by the stop can meanwhile become some outgoing connection's local port (seen:
    the dev server's restart refused "address already in use")."""
    ports = own_ports()
    for _ in range(1000):
        port = random.choice(ports)
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


@asynccontextmanager
async def serving(
    app: Any, port: int | None = None, graceful_seconds: float | None = None
) -> AsyncIterator[str]:
    """Run `app` under uvicorn until the block exits; yield its base URL.

    `graceful_seconds` bounds the shutdown: requests still open then are cancelled.
    """
    async with serving_all(app, graceful_seconds=graceful_seconds, port=port) as (url,):
        yield url


@asynccontextmanager
async def serving_all(
    *apps: Any, graceful_seconds: float | None = None, port: int | None = None
) -> AsyncIterator[tuple[str, ...]]:
    """Run several apps, each on its own port; yield their base URLs in order.

    They stop together (`_Server.stop`), at once when no connection is open.
    """
    servers = [_server(app, port if len(apps) == 1 else None, graceful_seconds) for app in apps]
    handlers = _signal_handlers()
    tasks = [asyncio.create_task(server.serve()) for server, _ in servers]
    try:
        for (server, _), task in zip(servers, tasks, strict=True):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        yield tuple(url for _, url in servers)
    finally:
        for server, _ in servers:
            server.stop()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        # Each server puts back the SIGINT/SIGTERM handlers it found when it started. Stopped
        # together they may do so out of order, leaving a stopped server's handler in place,
        # and sse-starlette takes SIGTERM's handler for the running server: every event
        # stream in the process (the test peers' A2A streams) would end at once.
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome


def _signal_handlers() -> dict[int, Any]:
    """The handlers uvicorn replaces while it serves (only the main thread has any)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}


def _server(
    app: Any, port: int | None, graceful_seconds: float | None
) -> tuple[uvicorn.Server, str]:
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
        # The product's protocol (app/platform/serve.py), so every test goes through it.
        http=BoundedHttpToolsProtocol,
    )
    return _Server(config), f"http://127.0.0.1:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, stopped without its two 0.1 s waits where they wait for nothing.

    Its main loop looks at `should_exit` every 0.1 s, and its shutdown pauses 0.1 s for
    the connections it has just asked to close: ~0.2 s for every stop, which nearly every
    test pays (~730 in the suite, ~70 s of its wall time). `stop()` wakes the loop at once
    (it still ticks every 0.1 s: the Date header, a signal's `should_exit`), and a server
    with no connection left skips the pause; with one open, uvicorn's shutdown runs as is.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stopped = asyncio.Event()

    def stop(self) -> None:
        self.should_exit = True
        self._stopped.set()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), 0.1)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        if not self.force_exit:
            await self.lifespan.shutdown()
