"""One settings object for every entry point (`TRELLIS_*` environment variables)."""

from __future__ import annotations

import re
from datetime import timedelta
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_address
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from activities.executors.http_guard import DEFAULT_MAX_RESPONSE_BYTES, parse_networks
from activities.executors.token_algorithms import TokenAlgorithm
from temporal_workflows.definition import MAX_GATE_TIMEOUT_SECONDS

# The longest grace or interval a setting takes, in seconds (a day).
MAX_WAIT_SECONDS = 86_400
# The largest payload kept in Temporal history rather than the store. Temporal refuses a
# payload field over 2 MiB (the server's limit.blobSize.error; TMPRL1103 in the SDK) and
# a request over 4 MiB (gRPC), and one workflow task carries every step it starts: half
# the refused size leaves room for the envelope and for a few such payloads in a task.
MAX_OFFLOAD_BYTES = 1024 * 1024
# The longest run retention, in days (a century).
MAX_RETENTION_DAYS = 36_500


class Settings(BaseSettings):
    # An empty variable means unset (the default), for every setting: docker compose
    # passes `${VAR:-}` as one. Given as a flag, an empty value is refused where the
    # setting must not be empty (min_length) and means unset where it is optional.
    model_config = SettingsConfigDict(env_prefix="TRELLIS_", extra="ignore", env_ignore_empty=True)

    data_dir: Path = Path(".trellis")
    api_host: str = Field(default="127.0.0.1", min_length=1)
    api_port: int = Field(default=8000, ge=1, le=65535)
    # API processes (uvicorn workers) sharing the port; each has its own store connection,
    # Temporal client and live-event feed. More than one spreads reads over the cores.
    api_workers: int = Field(default=1, ge=1, le=64)
    temporal_port: int = Field(default=7233, ge=1, le=65535)
    ui_port: int = Field(default=8233, ge=1, le=65535)
    # The embedded dev server's HTTP API; unset: a free port it picks at each start, as
    # before the setting (a fixed default would stop a second platform on the machine
    # that moved every other port), which no firewall rule or client could name.
    temporal_http_api_port: int | None = Field(default=None, ge=1, le=65535)
    # The embedded dev server's own Prometheus /metrics; unset: a free port it picks at each
    # start (no scrape configuration can name that).
    temporal_metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # When set, Trellis uses that Temporal cluster and starts no dev server.
    temporal_address: str | None = None
    temporal_namespace: str = Field(default="default", min_length=1)
    # Unset: TLS exactly when an API key is set (the SDK's own rule; a key is never sent in
    # the clear unless TLS is turned off explicitly).
    temporal_tls: bool | None = None
    # Each turns TLS on (app/temporal_tls.py): the CA that signed the server's certificate
    # (PEM; default: the system's), a client certificate and its key for mTLS (both or
    # neither), and the name the server's certificate is checked against (and SNI).
    temporal_tls_ca_file: Path | None = None
    temporal_tls_cert_file: Path | None = None
    temporal_tls_key_file: Path | None = None
    temporal_tls_server_name: str | None = None
    temporal_api_key: SecretStr | None = None
    task_queue: str = Field(default="trellis", min_length=1)
    # Default: the SQLite file in the data dir; `mongodb://…` selects MongoDB.
    store_url: str | None = Field(default=None, repr=False)  # may hold a password
    executors_file: Path | None = None
    # Largest run input or step output, in bytes (payloads above the offload size are kept
    # in the store, not in Temporal history).
    max_payload_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    payload_offload_bytes: int = Field(default=256 * 1024, gt=0, le=MAX_OFFLOAD_BYTES)
    # The most node runs (as stored) one answer carries, in bytes: a run detail, a page of
    # runs or of node runs past it is 400 `response_too_large` (building an answer takes
    # about ten times its size in the API's memory; 2 GB of node runs killed the API).
    max_response_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    # Largest accepted request body, in bytes (default: the payload limit plus 1 MiB).
    max_body_bytes: int | None = Field(default=None, gt=0)
    # On SIGTERM the worker stops polling and gives in-flight steps this long to finish
    # before it cancels them (Temporal's worker graceful shutdown), in seconds.
    # At most a day: inf or 1e300 passed the check, then crashed the start (OverflowError).
    worker_shutdown_grace_seconds: float = Field(
        default=30.0, ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False
    )
    # Workflows the worker keeps in memory between their tasks (Temporal's sticky cache);
    # one evicted is replayed from its history on its next task. 2,000 runs held at gates
    # measure ~280 MB RSS with the default (docs/benchmarks.md, bench/gate_memory.py).
    # At most a million: the SDK hands it to its core as a machine-sized integer (a bigger
    # value crashed the start, OverflowError), and a million runs at ~140 KB each is
    # ~140 GB, far past any worker's memory.
    worker_max_cached_workflows: int = Field(default=1000, ge=0, le=1_000_000)
    # On SIGTERM the API stops accepting, ends live event streams at once and gives open
    # requests this long to finish before it cancels them, in seconds.
    # A float as the worker's grace is (`2.5` was refused as not an integer).
    api_shutdown_grace_seconds: float = Field(
        default=10.0, ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False
    )
    # The worker's Prometheus /metrics (Trellis's worker metrics and the Temporal SDK's):
    # served on this port when set, bound to this address (docs/operations.md, Metrics).
    worker_metrics_port: int | None = Field(default=None, ge=1, le=65535)
    worker_metrics_host: str = Field(default="127.0.0.1", min_length=1)
    # Run details and pages of runs the API keeps to answer again while nothing they show
    # was written (app/services/read_cache.py), in bytes per API process; 0 turns it off.
    read_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    # Schedules one workflow may have: each fires runs for good, and the list describes
    # every one (no paging). Counted from Temporal's visibility with each API process's
    # own recent and in-flight creates (docs/lineage-events-schedules.md).
    max_schedules_per_workflow: int = Field(default=100, ge=1, le=10_000)
    # How often the reconciler compares open runs with Temporal, in seconds.
    reconcile_interval_seconds: float = Field(
        default=5.0, gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False
    )
    # How often the worker cancels A2A tasks left running by steps whose worker was lost
    # (activities/a2a_task_sweep.py), in seconds; it also does at its start.
    a2a_task_sweep_seconds: float = Field(
        default=30.0, gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False
    )
    # Run retention (app/run_retention.py): the worker deletes runs that ended longer ago
    # than this many days (fractions too), with their node runs and events; unset or 0
    # keeps every run. At most a century: 1e9 days would overflow the cutoff's date.
    run_retention_days: float | None = Field(
        default=None, ge=0, le=MAX_RETENTION_DAYS, allow_inf_nan=False
    )
    # The Temporal Web UI the console links runs to; unset: the embedded dev server's UI
    # (none when a cluster is used and this is not set).
    temporal_ui_url: str | None = None
    # Gate timeout for nodes whose humanReview sets none (null: wait indefinitely).
    # Finite: `nan` was refused as "must be less than or equal to 31622400".
    default_gate_timeout_seconds: float | None = Field(
        default=None, gt=0, le=MAX_GATE_TIMEOUT_SECONDS, allow_inf_nan=False
    )
    # How often MCP servers are asked for their tools and A2A cards fetched, in seconds.
    catalog_refresh_seconds: float = Field(
        default=60.0, gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False
    )

    # Who calls (docs/security.md): `dev` (no token; every caller is the local admin `dev`,
    # loopback only) or `jwt` (a verified bearer token on every request but the probes).
    auth_mode: Literal["dev", "jwt"] = "dev"
    # HS256 tokens are checked with this secret; RS256/ES256 tokens against this key set.
    jwt_secret: SecretStr | None = None
    jwt_jwks_url: str | None = None
    # Checked when set.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Where a token keeps scopes (a space-separated string or a list), roles and the
    # display name; a dotted path reaches into an object (`realm_access.roles`).
    jwt_scopes_claim: str = Field(default="scope", min_length=1)
    jwt_roles_claim: str = Field(default="roles", min_length=1)
    jwt_name_claim: str = Field(default="name", min_length=1)

    # builtin:http reaches public addresses only; these CIDR networks too (comma-separated).
    http_allowed_networks: Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode] = ()
    # The most of an answer builtin:http reads (decoded), in bytes.
    http_max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, gt=0)

    # Downstream identity: with a key, MCP (HTTP) and A2A requests of a run that has a
    # triggering identity carry a fresh JWT for it (docs/security.md). An HMAC secret, or
    # a PEM private key for RS*/PS*/ES*/EdDSA; or the file holding either.
    service_token_key: SecretStr | None = None
    service_token_key_file: Path | None = None
    service_token_algorithm: TokenAlgorithm = "HS256"
    service_token_issuer: str = Field(default="trellis", min_length=1)
    service_token_audience: str | None = None
    service_token_ttl_seconds: int = Field(default=300, ge=10, le=3600)
    # `Authorization` carries `Bearer <token>`; any other header carries the bare token.
    service_token_header: str = Field(default="Authorization", pattern=r"^[A-Za-z0-9-]+$")
    service_token_key_id: str | None = None

    # Logs of every process: the least level written, and text (a terminal) or JSON lines.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    log_format: Literal["text", "json"] = "text"

    # Choices are taken in any case, from a variable as from a flag (app/cli/settings_options.py)
    # and spelt as listed (`hs256` → `HS256`, `eddsa` → `EdDSA`); a value that is none of
    # them is left as typed, for the message that quotes it ('verbose', not 'VERBOSE').
    @field_validator(
        "log_level", "log_format", "auth_mode", "service_token_algorithm", mode="before"
    )
    @classmethod
    def _choice(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str) or info.field_name is None:
            return value
        choices = get_args(cls.model_fields[info.field_name].annotation)
        return next((c for c in choices if c.lower() == value.lower()), value)

    @field_validator(
        "temporal_address",
        "temporal_api_key",
        "temporal_tls_ca_file",
        "temporal_tls_cert_file",
        "temporal_tls_key_file",
        "temporal_tls_server_name",
        "store_url",
        "executors_file",
        "temporal_ui_url",
        "jwt_secret",
        "jwt_jwks_url",
        "jwt_issuer",
        "jwt_audience",
        "service_token_key",
        "service_token_key_file",
        "service_token_audience",
        "service_token_key_id",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # An optional setting given empty (a flag; an empty variable is ignored) is unset.
        return None if value == "" else value

    @field_validator("data_dir", mode="before")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        # `Path("")` is the working directory: trellis.db landed wherever the command ran.
        if value == "":
            raise ValueError("must not be empty")
        return value

    @field_validator("temporal_namespace", "task_queue")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        # Spaces passed min_length=1: a worker polled a task queue named '  '.
        if value and not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("temporal_tls_server_name")
    @classmethod
    def _server_name(cls, value: str | None) -> str | None:
        # Checked here: a bad name failed only at connect, in the SDK's words, naming no
        # setting.
        if value is not None and not is_server_name(value):
            raise ValueError("must be a DNS name (letters, digits, hyphens, dots) or an IP address")
        return value

    @field_validator("temporal_address")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        # Checked here: `http://host:7233` made the SDK print a raw warning (not a log
        # line), and `host` alone dialled port 80.
        if value is not None and not is_host_port(value):
            raise ValueError(
                "must be host:port (e.g. temporal.example.com:7233, [::1]:7233), no scheme"
            )
        return value

    @field_validator("jwt_jwks_url", "temporal_ui_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # Checked here: a key set URL failed when first fetched, with a traceback; a Web UI
        # URL without a scheme became a broken relative link in the console.
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("http_allowed_networks", mode="before")
    @classmethod
    def _networks(cls, value: Any) -> Any:
        return parse_networks(value) if isinstance(value, (str, list, tuple)) else value

    @property
    def temporal_api_key_value(self) -> str | None:
        return self.temporal_api_key.get_secret_value() if self.temporal_api_key else None

    @property
    def resolved_max_body_bytes(self) -> int:
        return self.max_body_bytes or self.max_payload_bytes + 1024 * 1024

    @property
    def run_retention(self) -> timedelta | None:
        """How long an ended run is kept; None: for good."""
        days = self.run_retention_days
        return timedelta(days=days) if days else None

    @property
    def resolved_temporal_address(self) -> str:
        return self.temporal_address or f"127.0.0.1:{self.temporal_port}"

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite:///{(self.data_dir / 'trellis.db').resolve()}"

    @property
    def resolved_temporal_ui_url(self) -> str | None:
        if self.temporal_ui_url:
            return self.temporal_ui_url.rstrip("/")
        return f"http://127.0.0.1:{self.ui_port}" if self.embedded_temporal else None

    @property
    def embedded_temporal(self) -> bool:
        return self.temporal_address is None


_HOST_PORT = re.compile(r"(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>[0-9]{1,5})")


def is_host_port(value: str) -> bool:
    """`host:port` with a port of 1-65535; an IPv6 address in brackets."""
    found = _HOST_PORT.fullmatch(value)
    if found is None or not 1 <= int(found["port"]) <= 65535:
        return False
    if found["ipv6"] is not None:
        try:
            IPv6Address(found["ipv6"])
        except ValueError:
            return False
    return True


_DNS_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def is_server_name(value: str) -> bool:
    """A DNS name (labels of letters, digits and inner hyphens; a final dot allowed) or an
    IP address: what a certificate names and SNI carries."""
    try:
        ip_address(value)
        return True
    except ValueError:
        pass
    labels = value.removesuffix(".").split(".")
    return len(value) <= 253 and all(_DNS_LABEL.fullmatch(label) for label in labels)


@lru_cache
def get_settings() -> Settings:
    return Settings()
