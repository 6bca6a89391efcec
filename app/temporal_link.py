"""The API's Temporal client, connected on demand so the API serves reads while Temporal is down."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import timedelta

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, Interceptor
from temporalio.service import RPCError, RPCStatusCode

from activities.store.base import Store
from app.errors import ServiceUnavailable
from app.redaction import describe
from app.settings import Settings
from app.setup import missing_search_attributes, search_attributes_missing
from app.temporal import connect_temporal
from app.temporal_outage import CLIENT_TIMEOUT, outage_cause

log = logging.getLogger("trellis.temporal")
HEALTH_TIMEOUT = timedelta(seconds=2)
# Before each retry of a health check whose connection went (seconds).
HEALTH_RETRY_PAUSES = (0.05, 0.2)
# After a failed attempt, wait this long before dialling again, so a burst of requests
# during an outage does not become a burst of connection attempts.
RETRY_AFTER_SECONDS = 1.0


class TemporalLink:
    """Holds the client once connected; a given client is used as is."""

    def __init__(
        self,
        settings: Settings,
        client: Client | None = None,
        store: Store | None = None,
        interceptors: Sequence[Interceptor] = (),
    ) -> None:
        self.settings = settings
        self._interceptors = interceptors
        self.client = client
        self._store = store
        self.last_error: str | None = None
        self._lock = asyncio.Lock()
        self._next_attempt = 0.0
        # Once seen, not asked again on every probe (`trellis setup` does not remove them).
        self._search_attributes_seen = False

    async def require(self) -> Client:
        """The client, connecting now if needed; ServiceUnavailable when Temporal is down."""
        if self.client is not None:
            return self.client
        async with self._lock:
            if self.client is None and time.monotonic() >= self._next_attempt:
                try:
                    self.client = await connect_temporal(
                        self.settings, self._store, interceptors=self._interceptors
                    )
                    self.last_error = None
                except Exception as exc:  # the SDK reports a refused dial as RuntimeError
                    self.last_error = str(exc)
                    log.warning("Temporal unreachable: %s", describe(exc))
                    self._next_attempt = time.monotonic() + RETRY_AFTER_SECONDS
        if self.client is None:
            # The SDK's message stays in the log: callers learn what is down, not its internals.
            raise ServiceUnavailable(
                f"Temporal at {self.settings.resolved_temporal_address} is unreachable"
            )
        return self.client

    async def problem(self) -> str | None:
        """Why Temporal is not usable right now, or None when its health check passes."""
        try:
            client = await self.require()
        except ServiceUnavailable as exc:
            return exc.message
        address = client.service_client.config.target_host
        try:
            healthy = await _check_health(client)
            if healthy and await _namespace_missing(client):
                # It passes the health check, then refuses every run.
                return f"no namespace {client.namespace!r} (TRELLIS_TEMPORAL_NAMESPACE)"
            if healthy and not self._search_attributes_seen:
                # Every trigger would fail (503) until `trellis setup` adds them.
                missing = await _search_attributes_missing(client)
                if missing:
                    return search_attributes_missing(client.namespace, address, missing)
                self._search_attributes_seen = True
        except Exception as exc:
            log.warning("Temporal health check at %s failed: %s", address, describe(exc))
            if outage_cause(exc) is not None:
                # Gone since the API connected: what is down and where, as at start-up.
                return f"Temporal at {address} is unreachable"
            return f"the health check of Temporal at {address} failed (the API's log says why)"
        return None if healthy else f"Temporal at {address} reports not serving"


async def _check_health(client: Client) -> bool:
    """The health check, asked again when its connection went while it was on the way
    (the server closed an aged connection, say: "transport error", "operation was
    canceled"). Each retry waits a little first: asked at once, the check can go out on
    the connection that just died before the client has seen it go (seen once in CI, on a
    loaded machine). The last failure, or a check that ran out of time, is the answer.

    All the asks share HEALTH_TIMEOUT: a Temporal that hangs (SIGSTOPped, a stalled
    network) was asked three times, 2 s each, since the SDK reports its own timeout as
    CANCELLED "Timeout expired", which read as a lost connection (/readyz took ~6.3 s)."""
    deadline = time.monotonic() + HEALTH_TIMEOUT.total_seconds()
    for pause in HEALTH_RETRY_PAUSES:
        try:
            return await client.service_client.check_health(timeout=_left(deadline))
        except RPCError as exc:
            if _timed_out(exc) or time.monotonic() + pause >= deadline:
                raise
            log.info("Temporal health check lost (%s); asking again", describe(exc))
        await asyncio.sleep(pause)
    return await client.service_client.check_health(timeout=_left(deadline))


def _timed_out(exc: RPCError) -> bool:
    return exc.status == RPCStatusCode.DEADLINE_EXCEEDED or (
        exc.status == RPCStatusCode.CANCELLED and exc.message == CLIENT_TIMEOUT
    )


def _left(deadline: float) -> timedelta:
    return timedelta(seconds=max(deadline - time.monotonic(), 0.01))


async def _namespace_missing(client: Client) -> bool:
    """Whether the cluster says it has no such namespace. Any other refusal (a key that
    may not describe namespaces, say) is not taken as one: runs may still work."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace), timeout=HEALTH_TIMEOUT
        )
    except RPCError as exc:
        return exc.status == RPCStatusCode.NOT_FOUND
    return False


async def _search_attributes_missing(client: Client) -> list[str]:
    """Our search attributes the namespace lacks; none when they cannot be listed (a key
    that may not list them is not taken as missing them)."""
    try:
        return await missing_search_attributes(client, client.namespace, HEALTH_TIMEOUT)
    except RPCError:
        return []
