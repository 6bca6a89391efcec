"""Connecting to Temporal: every client (API, worker, reconciler) speaks the same payloads.

Pydantic models on the wire, and payloads above `TRELLIS_PAYLOAD_OFFLOAD_BYTES` kept in
the document store instead of Temporal history (activities/payloads.py). Given no store
(`trellis setup`), large payloads are not offloaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime

from activities.payloads import data_converter
from activities.store.base import Store
from app.settings import Settings
from app.temporal_runtime import forwarding_runtime
from app.temporal_tls import temporal_tls


def converter(settings: Settings, store: Store | None) -> DataConverter:
    if store is None:
        return pydantic_data_converter
    return data_converter(store, settings.payload_offload_bytes)


async def connect_temporal(
    settings: Settings,
    store: Store | None = None,
    *,
    runtime: Runtime | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Client:
    """A client for the configured cluster (or the embedded dev server).

    `runtime`: the Temporal runtime to use (the worker's exports the SDK's metrics; by
    default one whose core logs go through our logging, app/temporal_runtime.py);
    `interceptors`: Temporal's tracing one when tracing is on (a worker inherits them).
    """
    return await Client.connect(
        settings.resolved_temporal_address,
        namespace=settings.temporal_namespace,
        tls=temporal_tls(settings),
        api_key=settings.temporal_api_key_value,
        data_converter=converter(settings, store),
        runtime=runtime or forwarding_runtime(),
        interceptors=interceptors,
    )


def with_pydantic(
    client: Client, store: Store | None = None, settings: Settings | None = None
) -> Client:
    """The same connection, speaking Trellis's payloads (large ones kept in `store`)."""
    config = client.config()
    config["data_converter"] = converter(settings or Settings(), store)
    return Client(**config)
