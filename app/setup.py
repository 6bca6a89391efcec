"""`trellis setup`: prepare a cluster and a store (search attributes, indexes); safe to repeat."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from app.redaction import redacted_url, scrub
from app.settings import Settings
from app.startup_failure import StartupFailure
from app.temporal import connect_temporal
from app.temporal_tls import untrusted_hint
from temporal_workflows import search_attributes

log = logging.getLogger("trellis.setup")
# While waiting for a cluster, say so again this often.
WAIT_REPORT_SECONDS = 10.0


class SetupError(StartupFailure):
    """Setup could not finish; the message says which part failed."""


async def _connect(settings: Settings, wait_seconds: float) -> Client:
    """Connect, retrying while the cluster is still starting (compose starts us beside it)."""
    address = settings.resolved_temporal_address
    started = time.monotonic()
    deadline = started + wait_seconds
    next_report = started
    while True:
        try:
            client = await connect_temporal(settings)
        except Exception as exc:
            now = time.monotonic()
            if now >= deadline:
                reason = " ".join(str(exc).split())
                raise SetupError(
                    f"cannot reach Temporal at {address}: {reason}{untrusted_hint(reason)}"
                ) from None
            if now >= next_report:
                log.info(
                    "waiting for Temporal at %s (namespace %s): %.0f of %.0f s, last error: %s",
                    address,
                    settings.temporal_namespace,
                    now - started,
                    wait_seconds,
                    " ".join(str(exc).split())[:200],
                )
                next_report = now + WAIT_REPORT_SECONDS
            await asyncio.sleep(1.0)
            continue
        log.info("Temporal reachable at %s (%.1f s)", address, time.monotonic() - started)
        return client


async def missing_search_attributes(
    client: Client, namespace: str, rpc_timeout: timedelta | None = None
) -> list[str]:
    """The names of our custom search attributes that the namespace lacks (RPCError when
    they cannot be listed)."""
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace), timeout=rpc_timeout
    )
    return sorted(
        key.name for key in search_attributes.ALL if key.name not in listed.custom_attributes
    )


def search_attributes_missing(namespace: str, address: str, missing: list[str]) -> str:
    """One line naming the namespace, the attributes it lacks and the command that adds them."""
    return (
        f"the namespace {namespace!r} at {address} lacks Trellis's search attributes "
        f"{', '.join(missing)}; run `trellis setup` with the same TRELLIS_TEMPORAL_* "
        "settings first"
    )


async def register_search_attributes(client: Client, namespace: str) -> list[str]:
    """Add our custom search attributes that the namespace lacks; return the names added."""
    names = set(await missing_search_attributes(client, namespace))
    missing = {
        key.name: IndexedValueType.ValueType(int(key.indexed_value_type))
        for key in search_attributes.ALL
        if key.name in names
    }
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(search_attributes=missing, namespace=namespace)
        )
    except RPCError as exc:
        # Another setup may have added them between our list and add: that is success.
        if exc.status != RPCStatusCode.ALREADY_EXISTS and "already exists" not in exc.message:
            raise
    return sorted(missing)


async def create_store_indexes(store_url: str) -> None:
    """Open the store once: `connect()` creates or migrates its schema and indexes."""
    from activities.store.factory import open_store

    store = open_store(store_url)
    await store.connect()
    await store.close()


async def run_setup(settings: Settings, wait_seconds: float = 60.0) -> list[str]:
    """Register search attributes on the configured cluster and prepare the store."""
    client = await _connect(settings, wait_seconds)
    try:
        added = await register_search_attributes(client, settings.temporal_namespace)
    except RPCError as exc:
        raise SetupError(f"registering search attributes failed: {exc.message}") from None
    url = settings.resolved_store_url
    log.info("preparing the store %s", redacted_url(url))
    try:
        await create_store_indexes(url)
    except Exception as exc:
        # Neither the URL nor a driver's message that quotes it may show its password.
        raise SetupError(
            f"preparing the store {redacted_url(url)} failed: {scrub(str(exc), url)}"
        ) from None
    return added
