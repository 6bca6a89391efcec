"""The worker's `/metrics` (TRELLIS_WORKER_METRICS_PORT): Trellis's worker metrics and the
Temporal SDK's own, on one port.

The SDK's metrics come from its Rust core, which can only export them through an HTTP
endpoint of its own (`PrometheusConfig`) or a buffer to drain. Its endpoint is bound to a
free loopback port nobody else sees; each scrape of ours reads it and serves its metrics
beside ours, unchanged (Temporal's names, labels and units, counters with `_total`), so a
worker is one scrape target.
"""

from __future__ import annotations

import logging
import socket
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from threading import Thread
from typing import Any

from prometheus_client import make_wsgi_app, start_http_server
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from temporalio.runtime import PrometheusConfig, Runtime

from activities.metrics import RunMetrics
from app.prometheus import standard_registry
from app.temporal_runtime import sdk_telemetry
from app.url_host import url_host

log = logging.getLogger("trellis.metrics")
SDK_SCRAPE_TIMEOUT_SECONDS = 2.0


class TemporalSdkMetrics(Collector):
    """The Temporal SDK's metrics, read from its loopback endpoint at each scrape."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def collect(self) -> Iterator[Any]:
        try:
            with urllib.request.urlopen(self.url, timeout=SDK_SCRAPE_TIMEOUT_SECONDS) as answer:
                text = answer.read().decode()
        except OSError as exc:
            log.warning("Temporal SDK metrics unavailable at %s: %s", self.url, exc)
            return
        yield from text_string_to_metric_families(text)


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def answering_head(app: WsgiApp) -> WsgiApp:
    """prometheus_client's app answers HEAD with 405: answer it as GET, without the body
    (a probe or a load balancer's health check asks with HEAD)."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "HEAD":
            return app(environ, allowing_head(start_response))
        answered: list[Any] = []
        body = b"".join(app({**environ, "REQUEST_METHOD": "GET"}, lambda *a: answered.extend(a)))
        status, headers = answered[0], answered[1]
        start_response(status, [*headers, ("Content-Length", str(len(body)))])
        return []

    return wrapped


def allowing_head(start_response: Callable[..., Any]) -> Callable[..., Any]:
    """A 405's or OPTIONS's `Allow` header names HEAD too."""

    def start(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
        fixed = [(k, f"{v},HEAD" if k.lower() == "allow" else v) for k, v in headers]
        return start_response(status, fixed, *rest)

    return start


def sdk_runtime(port: int) -> Runtime:
    """A Temporal runtime exporting the SDK's metrics on `127.0.0.1:port`."""
    metrics = PrometheusConfig(bind_address=f"127.0.0.1:{port}", counters_total_suffix=True)
    return Runtime(telemetry=sdk_telemetry(metrics))


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class WorkerMetrics:
    """What the worker counts with, and the Temporal runtime its client must use (if any)."""

    run_metrics: RunMetrics
    runtime: Runtime | None = None
    _server: Any = field(default=None, repr=False)
    _thread: Thread | None = field(default=None, repr=False)

    @classmethod
    def serve(cls, host: str, port: int | None) -> WorkerMetrics:
        """Serve `/metrics` on `host:port`; without a port, count for nobody (no server)."""
        if port is None:
            return cls(RunMetrics())
        registry = standard_registry()
        sdk_port = free_loopback_port()
        runtime = sdk_runtime(sdk_port)
        registry.register(TemporalSdkMetrics(sdk_port))
        run_metrics = RunMetrics(registry)
        server, thread = start_http_server(port, addr=host, registry=registry)
        # Swapped in at once; a scrape in between meets the library's own app (GET alike).
        server.set_app(answering_head(make_wsgi_app(registry)))
        log.info("worker metrics at http://%s:%d/metrics", url_host(host), port)
        return cls(run_metrics, runtime, server, thread)

    def close(self) -> None:
        """Stop serving; again, nothing."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
