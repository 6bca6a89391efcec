"""`trellis api` and `trellis worker`: one long-running process each, stopped by SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from app.heap import collector_back_if_start_fails, freeze_startup_heap, pause_collector
from app.platform.child_env import settings_env
from app.platform.metrics_dir import metrics_directory
from app.platform.preflight import (
    check_auth,
    check_service_tokens,
    check_store,
    check_store_reachable,
    check_temporal_tls,
    check_tracing,
    check_worker_metrics_port,
    ensure_port_free,
    load_executor_catalog,
)
from app.platform.ready_file import ReadyFileError, ready_note, remove_ready, write_ready
from app.settings import Settings

log = logging.getLogger(__name__)

# Beyond the worker's graceful shutdown: time to report what finished and close up.
SHUTDOWN_MARGIN_SECONDS = 8.0
# The API on asyncio's own loop though uvloop is installed (for the worker): under 50
# saturating clients uvloop left some connections waiting 1-2 s (p99 0.9-1.3 s vs
# 0.09-0.16 s, bench.run's reads); asyncio's loop serves them in turn.
EVENT_LOOP = "asyncio"


def run_api(settings: Settings) -> None:
    """Serve the API on uvicorn until SIGTERM/SIGINT (uvicorn handles both gracefully)."""
    if settings.api_workers == 1:
        pause_collector()  # until the app has started (app/heap.py)
    with collector_back_if_start_fails():
        _run_api(settings)


def _run_api(settings: Settings) -> None:
    _load_cel_parser()
    import uvicorn  # here, not above: a worker process has no use for it

    from app.http_protocol import BoundedHttpToolsProtocol

    check_auth(settings)
    check_temporal_tls(settings)
    check_tracing()
    ensure_port_free(settings.api_host, settings.api_port, "API", "--api-port / TRELLIS_API_PORT")
    check_store(settings)
    # Opened once here for a one-line error; the app opens its own in its lifespan.
    asyncio.run(check_store_reachable(settings))
    # Checked here for a one-line error; the app loads (and starts, and closes) its own copy.
    load_executor_catalog(settings)

    if settings.api_workers > 1:
        # uvicorn starts its worker processes from an import string; like every child of
        # `trellis dev`, they read the resolved settings back from the environment. A
        # scrape reaches any one of them: they keep their metrics in one directory, so
        # each answers for all (app/api_metrics.py). Each dies with this process, even
        # one SIGKILLed (app/api_process.py), so none keeps the port from its successor.
        from app.api_metrics import MULTIPROC_DIR_VARIABLE

        with metrics_directory() as metrics_dir:
            os.environ.update(settings_env(settings))
            os.environ[MULTIPROC_DIR_VARIABLE] = metrics_dir
            # As one process is served (below): our log lines, the shutdown grace.
            uvicorn.run(
                "app.api_process:app_from_env",
                factory=True,
                host=settings.api_host,
                port=settings.api_port,
                workers=settings.api_workers,
                lifespan="on",
                loop=EVENT_LOOP,
                log_config=None,
                # Typed int by uvicorn, which only waits that long (asyncio.wait_for).
                timeout_graceful_shutdown=settings.api_shutdown_grace_seconds,  # type: ignore[arg-type]
                http=BoundedHttpToolsProtocol,
            )
        return

    def factory() -> Any:
        # Imported here so `trellis --help` stays fast and free of the app's imports.
        from app.main import create_app
        from app.tracing import API_SERVICE, start_tracing

        return create_app(settings, tracer_provider=start_tracing(API_SERVICE), own_process=True)

    # log_config=None: uvicorn's loggers (access log included) go through ours (app/logs.py).
    # On SIGTERM uvicorn stops accepting and closes idle keep-alive connections;
    # sse-starlette ends live event streams at once (clients resume with Last-Event-ID
    # elsewhere); other open requests get the grace period, then are cancelled.
    config = uvicorn.Config(
        factory,
        factory=True,
        host=settings.api_host,
        port=settings.api_port,
        lifespan="on",
        loop=EVENT_LOOP,
        log_config=None,
        timeout_graceful_shutdown=settings.api_shutdown_grace_seconds,  # type: ignore[arg-type]
        # A bounded request head, and the API's error body for one it cannot parse.
        http=BoundedHttpToolsProtocol,
    )
    uvicorn.Server(config).run()


async def _worker(settings: Settings, ready_file: Path | None) -> None:
    from app.tracing import WORKER_SERVICE, start_tracing
    from app.worker import run_worker

    ready = asyncio.Event()
    tracer_provider = start_tracing(WORKER_SERVICE)
    main = asyncio.ensure_future(run_worker(settings, ready=ready, tracer_provider=tracer_provider))
    loop = asyncio.get_running_loop()

    def stop() -> None:
        if main.done() or main.cancelling():
            return
        main.cancel()
        # A worker whose Temporal server died with it can hang in shutdown RPCs; its
        # in-flight activities are retried elsewhere anyway, so do not outlive the grace.
        grace = settings.worker_shutdown_grace_seconds + SHUTDOWN_MARGIN_SECONDS
        loop.call_later(grace, os._exit, 0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)

    note = ready_note()
    unwritten: list[str] = []

    async def announce() -> None:
        await ready.wait()
        freeze_startup_heap()
        if ready_file is None:
            return
        try:
            await asyncio.to_thread(write_ready, ready_file, note)
        except OSError as exc:
            # Checked at start (app/cli/ready_file_option.py), it can still fail (the
            # directory removed since, a name too long): said now, and the worker stops,
            # exit 1, as its supervisor waits for the file in vain (it went unread).
            unwritten.append(f"cannot write the ready file {ready_file} (--ready-file): {exc}")
            log.error("%s; stopping", unwritten[0])
            stop()

    announcer = asyncio.ensure_future(announce())
    try:
        await main
    except asyncio.CancelledError:
        if not main.cancelled():
            raise
    finally:
        announcer.cancel()
        if ready_file is not None:
            # Only our own: a newer worker may have announced itself there since.
            await asyncio.to_thread(remove_ready, ready_file, note)
        if tracer_provider is not None:
            # The spans of the last steps, before the process exits.
            await asyncio.to_thread(tracer_provider.shutdown)
    if unwritten:
        raise ReadyFileError(unwritten[0])


def run_worker_process(settings: Settings, ready_file: Path | None = None) -> None:
    """Run the worker until SIGTERM/SIGINT; touch `ready_file` once it polls."""
    pause_collector()  # until it polls (app/heap.py)
    with collector_back_if_start_fails():
        _load_cel_parser()
        check_store(settings)
        check_temporal_tls(settings)
        load_executor_catalog(settings)
        check_service_tokens(settings)
        check_worker_metrics_port(settings)
        check_tracing()
        run_fast(_worker(settings, ready_file))


def _load_cel_parser() -> None:
    """CEL's parser from the user's cache (app/cel_parser.py): first thing, before anything
    imports CEL."""
    from app.cel_parser import use_saved_cel_parser

    log.debug("CEL's parser: %s", use_saved_cel_parser())


def run_fast(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run` on uvloop where it is installed: the worker's event loop is its hot
    path, and it serves no crowd of clients (bench.run, one run each on the same machine:
    20 MCP steps 1.16x vs 1.19x, 50-way A2A 1.36x vs 1.68x with asyncio's loop)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)
