"""No secret in a span: every span is masked as a log line is (activities/secret_text.py)
on its way to the exporter, whoever made it (FastAPI's request spans, Temporal's
interceptor, the executors' client spans).

An error's text reaches a span three ways: a failed call's status description (`tools/call
…`), and the `exception.message` and `exception.stacktrace` of the exception event Temporal's
interceptor records on `RunActivity` and `CompleteWorkflow`. A tool's error quoting
`password=…` was masked in the worker's log line and sent to the collector in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status
from opentelemetry.util.types import Attributes, AttributeValue

from activities.secret_text import scrub_request_path, scrub_secrets

# Span attributes that carry what a caller typed into a URL: masked as the access log masks
# a path, percent-encoded names too (`?%74oken=…`).
URL_ATTRIBUTES = frozenset({"url.query", "url.full", "http.target", "http.url"})


class SecretsMasked(SpanExporter):
    """An exporter that hands `inner` each span with its secrets masked: status description,
    string attributes (the span's and its events') and the URL attributes."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._inner.export([masked_span(span) for span in spans])

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def masked_span(span: ReadableSpan) -> ReadableSpan:
    """`span` itself when it holds no secret, else a copy with them masked."""
    attributes = _masked_attributes(span.attributes)
    events = [_masked_event(event) for event in span.events]
    description = span.status.description
    clean = scrub_secrets(description) if description else description
    if (
        attributes is span.attributes
        and all(new is old for new, old in zip(events, span.events, strict=True))
        and clean == description
    ):
        return span  # as it was: its counts of dropped attributes and events kept too
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code, clean),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _masked_event(event: Event) -> Event:
    attributes = _masked_attributes(event.attributes)
    if attributes is event.attributes:
        return event
    return Event(event.name, attributes, event.timestamp)


def _masked_attributes(attributes: Attributes) -> Attributes:
    """`attributes` itself when nothing in them changes, else a masked copy."""
    if not attributes:
        return attributes
    masked = {key: _masked_value(key, value) for key, value in attributes.items()}
    if all(masked[key] is value for key, value in attributes.items()):
        return attributes
    return masked


def _masked_value(key: str, value: AttributeValue) -> AttributeValue:
    if isinstance(value, str):
        clean = scrub_request_path(value) if key in URL_ATTRIBUTES else scrub_secrets(value)
        return value if clean == value else clean
    if isinstance(value, Sequence) and any(isinstance(item, str) for item in value):
        items = [scrub_secrets(item) if isinstance(item, str) else item for item in value]
        return value if items == list(value) else tuple(items)
    return value
