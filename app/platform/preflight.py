"""Checks made before anything starts, so a mistake is one clear line instead of a traceback."""

from __future__ import annotations

import errno
import ipaddress
import socket
import time
from pathlib import Path
from typing import Any

from app.settings import Settings
from app.startup_failure import StartupFailure


class PreflightError(StartupFailure):
    """Start-up cannot proceed; the message says why and what to change."""


def ensure_port_free(
    host: str, port: int, what: str, setting: str, wait_seconds: float = 0.0
) -> None:
    """Fail with a clear message when `host:port` is already taken (still taken after
    `wait_seconds`, for a port a stopping process gives up).

    The probe binds as the servers do, with `SO_REUSEADDR` (uvicorn and Go's listeners
    set it): connections of a process just stopped or killed linger in TIME_WAIT for up to
    a minute, and they must not keep its successor off the port.
    """
    deadline = time.monotonic() + wait_seconds
    while not _bound(host, port, what):
        if time.monotonic() >= deadline:
            raise PreflightError(
                f"port {port} on {host} ({what}) is already in use; "
                f"stop whatever holds it or choose another with {setting}"
            )
        time.sleep(0.1)


def _bound(host: str, port: int, what: str) -> bool:
    """Whether `host:port` could be bound now; False when it is in use."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise PreflightError(f"cannot bind {host}:{port} ({what}): {exc.strerror}") from None
    return True


def check_distinct_ports(ports: dict[str, int | None]) -> None:
    """Two parts given one port: each probe alone finds it free, then the second part to
    start fails with its own words. `ports` maps each part's setting to its port."""
    seen: dict[int, str] = {}
    for setting, port in ports.items():
        if port is None:
            continue
        if port in seen:
            raise PreflightError(
                f"port {port} is given to two parts ({seen[port]} and {setting}); "
                "choose another for one of them"
            )
        seen[port] = setting


# A worker killed with its supervisor (`kill -9` of `trellis dev`) gets SIGTERM and frees
# its metrics port first thing, within about half a second (the server's poll), before its
# graceful drain; a supervisor started again at once waits that long for it.
METRICS_PORT_WAIT_SECONDS = 3.0


def check_worker_metrics_port(settings: Settings) -> None:
    """The worker's /metrics port, when one is set, must be free (or freed in a moment)."""
    if settings.worker_metrics_port is not None:
        ensure_port_free(
            settings.worker_metrics_host,
            settings.worker_metrics_port,
            "worker metrics",
            "--worker-metrics-port / TRELLIS_WORKER_METRICS_PORT",
            wait_seconds=METRICS_PORT_WAIT_SECONDS,
        )


def check_tracing() -> None:
    """OTEL_* variables asking for an exporter or protocol Trellis lacks stop start-up."""
    from app.tracing import TracingSettingsError, check_tracing_settings

    try:
        check_tracing_settings()
    except TracingSettingsError as exc:
        raise PreflightError(str(exc)) from None


def load_executor_catalog(settings: Settings) -> Any:
    """The executor catalog (built-ins only without a file); a bad file names itself."""
    from activities.executors.catalog import CatalogError
    from app.outbound import executor_catalog

    path: Path | None = settings.executors_file
    try:
        return executor_catalog(settings)
    except CatalogError as exc:
        message = str(exc)
        if str(path) not in message:
            message = f"executor catalog {path}: {message}"
        raise PreflightError(message) from None


def check_store(settings: Settings) -> None:
    """The store URL names a store Trellis has, and a SQLite file's directory can be made."""
    from activities.store.factory import open_store
    from app.redaction import redacted_url

    url = settings.resolved_store_url
    setting = _store_setting(settings)
    try:
        open_store(url)  # not connected: a store that is down is the readiness probe's
    except ValueError as exc:
        # The URL may hold a password: its redacted form stands in for it in the message.
        message = str(exc).replace(url, redacted_url(url))
        raise PreflightError(f"{setting}: {message}") from None
    except OSError as exc:
        raise PreflightError(
            f"{setting}: cannot create the directory of {redacted_url(url)}: {exc.strerror}"
        ) from None


async def check_store_reachable(settings: Settings) -> None:
    """The store opens (a SQLite file, a MongoDB server that answers), or one line says why.

    The API opened it only inside uvicorn's lifespan, where a failure was a traceback and
    uvicorn's own exit code 3.
    """
    from activities.store.base import StoreError
    from activities.store.factory import open_store

    store = open_store(settings.resolved_store_url)
    try:
        await store.connect()
    except StoreError as exc:
        raise PreflightError(store_unreachable(settings, exc)) from None
    await store.close()


def store_unreachable(settings: Settings, exc: Exception) -> str:
    """One line naming the store (its password masked), its setting and why it failed
    to open."""
    from activities.store.base import StoreSchemaTooNew, StoreUrlInvalid
    from app.redaction import redacted_url, scrub

    url = settings.resolved_store_url
    reason = scrub(" ".join(str(exc).split()), url) or type(exc).__name__
    if isinstance(exc, StoreUrlInvalid):
        # The setting's fault, as an unsupported URL is (check_store): no store to reach.
        return f"{_store_setting(settings)}: {redacted_url(url)}: {reason}"
    if isinstance(exc, StoreSchemaTooNew):
        # Reached, and newer than this code: the reason says what to do.
        return f"{redacted_url(url)} ({_store_setting(settings)}): {reason}"
    return f"cannot reach the store at {redacted_url(url)} ({_store_setting(settings)}): {reason}"


def _store_setting(settings: Settings) -> str:
    if settings.store_url:
        return "--store-url / TRELLIS_STORE_URL"
    return "--data-dir / TRELLIS_DATA_DIR"


def check_service_tokens(settings: Settings) -> None:
    """Service-token settings that cannot sign stop start-up naming the setting."""
    from activities.executors.service_token import ServiceTokenError
    from app.outbound import service_token_signer

    try:
        service_token_signer(settings)
    except ServiceTokenError as exc:
        raise PreflightError(str(exc)) from None


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only (wildcards and names do not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_auth(settings: Settings) -> None:
    """Dev mode (no authentication) only on loopback; jwt mode needs a way to verify."""
    from app.auth.guard import Authenticator
    from app.auth.token_rules import TokenSettingsError

    if settings.auth_mode == "dev" and not is_loopback(settings.api_host):
        raise PreflightError(
            f"refusing to serve on {settings.api_host}: TRELLIS_AUTH_MODE=dev has no "
            "authentication (every caller is the admin); set TRELLIS_AUTH_MODE=jwt with "
            "TRELLIS_JWT_SECRET or TRELLIS_JWT_JWKS_URL, or bind to 127.0.0.1"
        )
    try:
        Authenticator.from_settings(settings)
    except TokenSettingsError as exc:
        raise PreflightError(str(exc)) from None


def check_temporal_tls(settings: Settings) -> None:
    """TLS settings for Temporal that cannot work stop start-up in one line."""
    from app.temporal_tls import check_temporal_tls as check

    check(settings)
