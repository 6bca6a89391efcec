"""`trellis dev`: the whole platform on one machine, started, supervised and stopped together."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import signal
import sys
import time
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import httpx

from app.platform.child_env import settings_env
from app.platform.devserver import DevServerError, dev_server_child, wait_for_temporal
from app.platform.preflight import (
    PreflightError,
    check_auth,
    check_distinct_ports,
    check_service_tokens,
    check_store,
    check_store_reachable,
    check_temporal_tls,
    check_tracing,
    check_worker_metrics_port,
    ensure_port_free,
    load_executor_catalog,
)
from app.platform.ready_file import ready_writer
from app.platform.serve import SHUTDOWN_MARGIN_SECONDS
from app.platform.supervisor import Child, first_exit, stop_all
from app.settings import Settings
from app.temporal_tls import check_no_tls_for_dev_server
from app.url_host import url_host

T = TypeVar("T")
log = logging.getLogger("trellis.dev")


class _Stopped(Exception):
    """A signal asked us to stop."""


class _ChildExited(Exception):
    """A supervised process ended on its own."""

    def __init__(self, child: Child) -> None:
        super().__init__(f"the {child.name} process exited unexpectedly (code {child.returncode})")
        self.child = child


def local_host(host: str) -> str:
    """A host to reach a server bound to `host` (wildcards mean this machine), as a URL
    writes it (`[::1]`: `http://::1:8000` was waited on in vain)."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else url_host(host)


@contextmanager
def data_dir_lock(data_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock so two `trellis dev` never share one data dir."""
    with (data_dir / "trellis.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PreflightError(
                f"another `trellis dev` is already using the data dir {data_dir}"
            ) from None
        yield


# A dev server told to stop (its `trellis dev` killed) frees its gRPC port at once and its
# /metrics about a second later (measured: 1.1 s): a `trellis dev` started again at once
# waits for it, with room for a loaded machine.
TEMPORAL_METRICS_PORT_WAIT_SECONDS = 8.0


def preflight(settings: Settings) -> None:
    """Refuse to start on a taken port or a bad catalog, before any process is spawned."""
    check_no_tls_for_dev_server(settings)
    check_temporal_tls(settings)
    check_auth(settings)
    embedded = settings.embedded_temporal
    check_distinct_ports(
        {
            "--api-port / TRELLIS_API_PORT": settings.api_port,
            "--temporal-port / TRELLIS_TEMPORAL_PORT": settings.temporal_port if embedded else None,
            "--ui-port / TRELLIS_UI_PORT": settings.ui_port if embedded else None,
            "--temporal-http-api-port / TRELLIS_TEMPORAL_HTTP_API_PORT": (
                settings.temporal_http_api_port if embedded else None
            ),
            "--temporal-metrics-port / TRELLIS_TEMPORAL_METRICS_PORT": (
                settings.temporal_metrics_port if embedded else None
            ),
            "--worker-metrics-port / TRELLIS_WORKER_METRICS_PORT": settings.worker_metrics_port,
        }
    )
    ensure_port_free(settings.api_host, settings.api_port, "API", "--api-port / TRELLIS_API_PORT")
    if embedded:
        ensure_port_free(
            "127.0.0.1",
            settings.temporal_port,
            "Temporal",
            "--temporal-port / TRELLIS_TEMPORAL_PORT",
        )
        ensure_port_free(
            "127.0.0.1", settings.ui_port, "Temporal Web UI", "--ui-port / TRELLIS_UI_PORT"
        )
        if settings.temporal_http_api_port is not None:
            ensure_port_free(
                "127.0.0.1",
                settings.temporal_http_api_port,
                "Temporal HTTP API",
                "--temporal-http-api-port / TRELLIS_TEMPORAL_HTTP_API_PORT",
            )
        if settings.temporal_metrics_port is not None:
            ensure_port_free(
                "127.0.0.1",
                settings.temporal_metrics_port,
                "Temporal metrics",
                "--temporal-metrics-port / TRELLIS_TEMPORAL_METRICS_PORT",
                wait_seconds=TEMPORAL_METRICS_PORT_WAIT_SECONDS,
            )
    check_worker_metrics_port(settings)
    check_tracing()
    check_store(settings)
    load_executor_catalog(settings)
    check_service_tokens(settings)


def app_child(name: str, args: Sequence[str], env: dict[str, str], grace: float) -> Child:
    """A `trellis <command>` child running on this same Python."""
    return Child(name, [sys.executable, "-m", "app.cli", *args], env=env, grace_seconds=grace)


async def wait_for_ready_file(path: Path, writer: int | None, within: float) -> None:
    """Return once process `writer` has written its ready file at `path`."""
    deadline = time.monotonic() + within
    # A worker left over from a killed `trellis dev` may write one too: wait for our own's.
    while await asyncio.to_thread(ready_writer, path) != writer:
        if time.monotonic() > deadline:
            raise DevServerError(f"the worker did not report ready within {within:.0f}s")
        await asyncio.sleep(0.05)


async def wait_for_ready(base_url: str, within: float) -> None:
    """Return once `GET /readyz` answers 200."""
    deadline = time.monotonic() + within
    last = "no answer"
    async with httpx.AsyncClient(timeout=2.0) as http:
        while time.monotonic() < deadline:
            try:
                response = await http.get(f"{base_url}/readyz")
                if response.status_code == 200:
                    return
                last = f"{response.status_code} {response.text[:200]}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            await asyncio.sleep(0.1)
    raise DevServerError(f"the API at {base_url} was not ready within {within:.0f}s ({last})")


async def _until(work: Awaitable[T], stop: asyncio.Event, children: Sequence[Child]) -> T:
    """Await `work` unless a signal arrives or a child exits first."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    exited = asyncio.ensure_future(first_exit(children)) if children else None
    watched = [t for t in (task, stopped, exited) if t is not None]
    try:
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        if exited is not None and exited.done():
            raise _ChildExited(exited.result())
        raise _Stopped
    finally:
        for t in watched:
            t.cancel()
        # Collect what the cancelled waits raised, so nothing is reported as never retrieved.
        await asyncio.gather(*watched, return_exceptions=True)


def _banner(settings: Settings, api_url: str) -> str:
    temporal = (
        f"  Temporal Web UI: http://127.0.0.1:{settings.ui_port}\n"
        if settings.embedded_temporal
        else f"  Temporal:        {settings.resolved_temporal_address} (external cluster)\n"
    )
    metrics = f"  Metrics:         {api_url}/metrics"
    if settings.worker_metrics_port is not None:
        host = local_host(settings.worker_metrics_host)
        metrics += f", http://{host}:{settings.worker_metrics_port}/metrics (worker)"
    if settings.embedded_temporal and settings.temporal_metrics_port is not None:
        metrics += f", http://127.0.0.1:{settings.temporal_metrics_port}/metrics (Temporal)"
    return (
        "Trellis is ready.\n"
        f"  Console:         {api_url}/console/\n"
        f"  API docs:        {api_url}/docs\n"
        f"{metrics}\n"
        f"{temporal}"
        f"  Data dir:        {settings.data_dir.resolve()}\n"
        "Press Ctrl-C to stop."
    )


async def _announced(work: Awaitable[None], started: float, message: str) -> None:
    """Await `work`, then say that it is ready and how long it took."""
    await work
    log.info("%s (%.1f s)", message, time.monotonic() - started)


async def _start(
    settings: Settings, children: list[Child], stop: asyncio.Event, within: float
) -> str:
    """Start Temporal (embedded), then the worker and the API; return the API's base URL."""
    data_dir = settings.data_dir.resolve()
    env = settings_env(settings)
    address = settings.resolved_temporal_address
    started = time.monotonic()
    if settings.embedded_temporal:
        log.info("starting the Temporal dev server on %s (state in %s)", address, data_dir)
        temporal = dev_server_child(settings)
        await temporal.start()
        children.append(temporal)
    else:
        log.info("using the Temporal cluster at %s", address)
    ready = _announced(wait_for_temporal(settings, within), started, f"Temporal ready at {address}")
    await _until(ready, stop, children)

    ready_file = data_dir / "worker.ready"
    ready_file.unlink(missing_ok=True)
    # SIGKILL only once a child's own graceful shutdown had its time.
    worker_grace = settings.worker_shutdown_grace_seconds + SHUTDOWN_MARGIN_SECONDS
    api_grace = settings.api_shutdown_grace_seconds + 5.0
    worker = app_child(
        "worker", ["worker", "--ready-file", str(ready_file)], env, grace=worker_grace
    )
    api = app_child("api", ["api"], env, grace=api_grace)
    log.info("starting the worker and the API")
    started = time.monotonic()
    for child in (worker, api):
        await child.start()
        children.append(child)

    api_url = f"http://{local_host(settings.api_host)}:{settings.api_port}"
    both = asyncio.gather(
        _announced(
            wait_for_ready_file(ready_file, worker.pid, within),
            started,
            f"worker ready: polling task queue {settings.task_queue!r}",
        ),
        _announced(wait_for_ready(api_url, within), started, f"API ready at {api_url}"),
    )
    await _until(both, stop, children)
    return api_url


async def run_dev(settings: Settings, startup_timeout: float = 60.0) -> int:
    """Run the platform until SIGINT/SIGTERM (exit 0) or until a process dies (exit 1)."""
    data_dir = settings.data_dir.resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PreflightError(
            f"--data-dir / TRELLIS_DATA_DIR: cannot create {data_dir}: {exc.strerror}"
        ) from None
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    children: list[Child] = []
    with data_dir_lock(data_dir):
        preflight(settings)
        await check_store_reachable(settings)
        try:
            api_url = await _start(settings, children, stop, startup_timeout)
            print(_banner(settings, api_url), flush=True)
            await _until(stop.wait(), stop, children)
            return 0
        except _Stopped:
            return 0
        except (_ChildExited, DevServerError) as exc:
            # A log line like every other (TRELLIS_LOG_FORMAT=json: an object a shipper reads).
            log.error("%s; stopping the rest", exc)
            return 1
        finally:
            # Reverse start order: API first (no new requests), then the worker, then Temporal.
            await stop_all(list(reversed(children)))
            # A worker killed after its grace could not remove its own; ours alone.
            ready_file = data_dir / "worker.ready"
            if ready_writer(ready_file) in {c.pid for c in children if c.name == "worker"}:
                ready_file.unlink(missing_ok=True)
            if settings.log_format == "json":
                log.info("Trellis stopped.")  # one object per line, as every other line
            else:
                print("Trellis stopped.", file=sys.stderr, flush=True)
