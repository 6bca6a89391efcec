"""A platform calling the real peers, traced into an in-memory exporter (the API's requests,
Temporal's client and worker interceptor, the executors' calls, all on one test-local tracer
provider) or not traced at all, as with tracing off."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.executors.tracing import TRACER_NAME
from app.span_secrets import SecretsMasked
from app.tracing import temporal_interceptors
from tests.peers.catalog import Peers
from tests.support.platform import Platform, executor_registry, running_platform


@dataclass
class Traced:
    platform: Platform
    provider: TracerProvider
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        self.provider.force_flush()
        return list(self.exporter.get_finished_spans())


@asynccontextmanager
async def peer_platform(
    temporal_env: WorkflowEnvironment,
    tmp_path: Path,
    peers: Peers,
    provider: TracerProvider | None,
) -> AsyncIterator[Platform]:
    """A platform calling the real peers, traced into `provider` (None: tracing off)."""
    client = temporal_env.client
    if provider is not None:
        # The session's client, with Temporal's interceptor: the API's starts and the
        # worker built on it are traced.
        config = client.config()
        config["interceptors"] = temporal_interceptors(provider)
        client = Client(**config)
    # Its own catalog and sessions: the session's registry traces nothing.
    tracer = provider.get_tracer(TRACER_NAME) if provider is not None else None
    async with (
        executor_registry(peers.catalog_path, tracer=tracer) as registry,
        running_platform(client, tmp_path, registry, tracer_provider=provider) as platform,
    ):
        yield platform


@pytest.fixture
async def traced(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peers: Peers
) -> AsyncIterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    # Masked on the way out, as a process's provider exports (app/tracing.py).
    provider.add_span_processor(SimpleSpanProcessor(SecretsMasked(exporter)))
    try:
        async with peer_platform(temporal_env, tmp_path, peers, provider) as platform:
            yield Traced(platform, provider, exporter)
    finally:
        provider.shutdown()


@pytest.fixture
async def untraced(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peers: Peers
) -> AsyncIterator[Platform]:
    """The same platform as a process builds it with no OTEL_* variable set."""
    async with peer_platform(temporal_env, tmp_path, peers, None) as platform:
        yield platform
