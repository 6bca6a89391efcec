"""The API's metrics (`GET /metrics`): request latency by route, read-cache answers, open
gates, the process.

One registry per app. With several API processes on one port (`TRELLIS_API_WORKERS`), a
scrape reaches any one of them, so each process writes its samples to files in a shared
directory (prometheus-client's multiprocess mode, `PROMETHEUS_MULTIPROC_DIR`, set by
`trellis api`) and every process answers with the sum over all of them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from activities.store.base import Store
from app.prometheus import standard_registry
from app.services.gate_count import open_gates_by_workflow

log = logging.getLogger("trellis.metrics")

# prometheus-client's own variable: set, every process writes its samples to files there.
MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Most requests take milliseconds; a live event stream's duration is its lifetime.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
# Open gates are counted from the store at most this often; scrapes in between get the
# last count. `/metrics` needs no token, and a store with thousands of open gates costs
# its count tens of milliseconds on the API's loop: a flood of scrapes must not be a
# flood of counts. A scraper's interval (15 s by default) is far longer.
GATES_COUNTED_EVERY_SECONDS = 1.0


class OpenGates(Collector):
    """`trellis_gates_open`: the counts read from the store just before the scrape renders."""

    def __init__(self) -> None:
        self.by_workflow: dict[str, int] | None = None
        # Workflows this process has reported: once their gates close they read 0 rather
        # than vanish (a vanished series is "no data" on a dashboard, not zero).
        self._reported: set[str] = set()

    def collect(self) -> Iterator[Any]:
        if self.by_workflow is None:
            return  # the store did not answer: no value rather than a wrong one
        family = GaugeMetricFamily(
            "trellis_gates_open",
            "Approval gates waiting for a decision (counted from the store at most once a second)",
            labels=["workflow_id"],
        )
        self._reported |= self.by_workflow.keys()
        for workflow_id in sorted(self._reported):
            family.add_metric([workflow_id], self.by_workflow.get(workflow_id, 0))
        yield family


class ApiMetrics:
    def __init__(self, multiprocess_dir: str | None = None) -> None:
        # Several processes' samples add up; their process metrics would not.
        registry = CollectorRegistry() if multiprocess_dir else standard_registry()
        self.requests = Histogram(
            "trellis_http_request_duration_seconds",
            "API request duration, arrival to last byte, by method, route template and status",
            ["method", "route", "status"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.read_answers = Counter(
            "trellis_read_cache_answers_total",
            "Reads the read cache serves, by read and by how each was answered",
            ["read", "answer"],
            registry=registry,
        )
        if multiprocess_dir:
            # Every process's samples (this one's included) are read back from the files.
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=multiprocess_dir)  # type: ignore[no-untyped-call]
        self.open_gates = OpenGates()
        self._gates_counted_at = -GATES_COUNTED_EVERY_SECONDS
        registry.register(self.open_gates)
        self._registry = registry

    async def scrape(self, store: Store, accept: str | None) -> tuple[bytes, str]:
        """The exposition in the format the scraper accepts, and its content type."""
        now = time.monotonic()
        if now - self._gates_counted_at >= GATES_COUNTED_EVERY_SECONDS:
            self._gates_counted_at = now
            try:
                self.open_gates.by_workflow = await open_gates_by_workflow(store)
            except Exception as exc:
                log.warning("trellis_gates_open left out of this scrape: the store failed: %s", exc)
                self.open_gates.by_workflow = None
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self._registry), content_type
