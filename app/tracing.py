"""Traces: OpenTelemetry, off unless an OTLP endpoint is set (the standard `OTEL_*` variables).

On, one trace follows a run from `POST …/runs` to its last step: the API's request span
(FastAPI's own instrumentation) → Temporal's `StartWorkflow` client span → `RunWorkflow`
→ `StartActivity` / `RunActivity` (the SDK's `TracingInterceptor` on the API's client and
the worker's; it carries the context through workflow headers and handles the workflow
sandbox itself: workflow code imports no OpenTelemetry) → a client span for each MCP, A2A
and HTTP call a step makes (activities/executors/tracing.py), whose context goes on to the
peer. Each process exports its own spans over OTLP/HTTP; docs/operations.md, Traces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from app.span_secrets import SecretsMasked

if TYPE_CHECKING:  # neither is loaded where it is not used: a worker serves no FastAPI app
    from fastapi.telemetry import TelemetryConfig
    from temporalio.contrib.opentelemetry import TracingInterceptor

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
SUPPORTED_PROTOCOL = "http/protobuf"
# Service names, unless OTEL_SERVICE_NAME says otherwise.
API_SERVICE = "trellis-api"
WORKER_SERVICE = "trellis-worker"
# Requests that would only add noise to traces: probes and scrapes, every few seconds.
UNTRACED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class TracingSettingsError(Exception):
    """The OTEL_* variables ask for something Trellis cannot do; the message says what."""


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """True when an OTLP endpoint is set and neither the SDK nor trace export is disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    # docker compose passes `${VAR:-}` as an empty string: that means "not set".
    return any(environ.get(name, "").strip() for name in ENDPOINTS)


def start_tracing(
    service_name: str, environ: Mapping[str, str] = os.environ
) -> TracerProvider | None:
    """This process's tracer provider, set as the global one; None when tracing is off."""
    provider = tracer_provider_from_env(service_name, environ)
    if provider is not None:
        trace.set_tracer_provider(provider)
    return provider


def tracer_provider_from_env(
    service_name: str, environ: Mapping[str, str]
) -> TracerProvider | None:
    """A tracer provider exporting over OTLP/HTTP as `environ` says, or None when tracing is
    off. `service_name` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names one."""
    if not tracing_wanted(environ):
        return None
    _check_exporter(environ)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    # The sampler (OTEL_TRACES_SAMPLER), the exporter's headers, timeout, certificate and
    # compression (OTEL_EXPORTER_OTLP_*) and the batching (OTEL_BSP_*) come from the
    # environment as the OpenTelemetry SDK reads them; the endpoint as the spec says (a
    # traces endpoint as is, the general one with /v1/traces appended).
    provider = TracerProvider(resource=resource)
    endpoint = environ.get(ENDPOINTS[0], "").strip()
    if not endpoint:
        endpoint = f"{environ[ENDPOINTS[1]].strip().rstrip('/')}/v1/traces"
    # Masked on the way out, as a log line is: no secret in a span (app/span_secrets.py).
    exporter = SecretsMasked(OTLPSpanExporter(endpoint=endpoint))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def check_tracing_settings(environ: Mapping[str, str] = os.environ) -> None:
    """TracingSettingsError when tracing is on and asks for what Trellis cannot do."""
    if tracing_wanted(environ):
        _check_exporter(environ)


def _check_exporter(environ: Mapping[str, str]) -> None:
    exporter = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter != "otlp":
        raise TracingSettingsError(
            f"OTEL_TRACES_EXPORTER={exporter!r}: Trellis exports traces over OTLP only "
            "(otlp, or none to turn tracing off)"
        )
    # The traces variable wins over the general one, so the hint names the one that is set.
    variable = next((n for n in PROTOCOLS if environ.get(n)), None)
    protocol = environ[variable] if variable else SUPPORTED_PROTOCOL
    if protocol.strip() != SUPPORTED_PROTOCOL:
        raise TracingSettingsError(
            f"OTLP protocol {protocol!r}: Trellis exports over http/protobuf (a collector's "
            f"port 4318); set {variable}=http/protobuf"
        )


def temporal_interceptors(provider: TracerProvider | None) -> list[TracingInterceptor]:
    """Temporal's tracing interceptor for a client (its workers take it from the client)."""
    if provider is None:
        return []
    # Imported when tracing is on: it loads Temporal's worker package (~0.25 s at start).
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(provider.get_tracer("temporalio"))]


def fastapi_telemetry(provider: TracerProvider | None) -> TelemetryConfig:
    """FastAPI's own instrumentation: request spans when tracing is on, nothing else.

    Its metrics and logs stay off (Prometheus and app/logs.py do those), and so do its
    spans per dependency and serialization: a request is one span, with Temporal's calls and
    the worker's under it.
    """
    return {
        "tracer_provider": provider,
        "tracing": provider is not None,
        "metrics": False,
        "logs": False,
        "operation_spans": False,
        "auto_configure": False,
        "exclude": lambda scope: scope.get("path") in UNTRACED_PATHS,
    }
