"""What the API's and the worker's `/metrics` both carry: this process's own metrics."""

from __future__ import annotations

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    disable_created_metrics,
)


def standard_registry() -> CollectorRegistry:
    """A registry with the process, platform and garbage-collector metrics of this process."""
    # No `*_created` series beside every counter and histogram: Prometheus does not use them.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry
