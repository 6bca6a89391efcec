"""Client spans for the calls a step makes — an MCP tool, an A2A agent, `builtin:http` — and
the trace context they hand the peer, so its spans join the run's trace.

A span is a child of the step's `RunActivity` span (Temporal's interceptor makes it current
in the activity). The context travels as W3C `traceparent` / `tracestate`: in an MCP
request's `_meta` (as OpenTelemetry's MCP conventions say, and the only way through stdio),
and as HTTP headers on A2A and `builtin:http` requests. With tracing off (no tracer given),
no span is started and nothing is added to any request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

TRACER_NAME = "trellis.executors"


class CallTracer:
    """Starts the client span of one outgoing call."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        # None when tracing is off: then no span is started at all. OpenTelemetry's no-op
        # tracer still made a span and switched the current context per call (~2 % of the
        # worker on remote steps, `bench.profile --workload a2a-runs`).
        self._tracer = tracer

    @contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
        """A client span, current inside; an exception marks it failed and is re-raised."""
        if self._tracer is None:
            yield trace.INVALID_SPAN
            return
        with self._tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                yield span
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise
            except asyncio.CancelledError:
                # Cut off (the step's timeout, the run's cancel): not an answer. The
                # tracer marks an Exception failed by itself, not a cancellation.
                span.set_attribute("error.type", "cancelled")
                span.set_status(Status(StatusCode.ERROR, "the call was cancelled"))
                raise


def trace_context() -> dict[str, str]:
    """The current span's context as W3C trace-context fields (empty with tracing off)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


async def send_trace_context(request: httpx.Request) -> None:
    """An httpx request hook: the current trace context as headers (unless already set)."""
    for name, value in trace_context().items():
        request.headers.setdefault(name, value)


def url_attribute(url: str) -> str:
    """A URL for a span: without user info and query (either may hold a secret)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
