"""Every setting as a flag of the commands that read it, and the help that lists them.

A flag overrides its `TRELLIS_*` variable, which overrides the default. Secrets
(`SecretStr` settings) have no flag, so they never show in a process list: they are
read from the environment only.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from app.cli.flag_pairs import OnOffFlag
from app.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

PLATFORM_COMMANDS = ("dev", "api", "worker", "setup")
# Every command that reads settings: the platform's, and `trellis token` (it signs as the
# API verifies).
SETTINGS_COMMANDS = (*PLATFORM_COMMANDS, "token")
_CONNECT = frozenset({"dev", "api", "worker", "setup"})
_SERVE = frozenset({"dev", "api", "worker"})
_API = frozenset({"dev", "api"})
_WORKER = frozenset({"dev", "worker"})
_API_AND_TOKEN = _API | {"token"}
_DEV = frozenset({"dev"})

# Which commands read a setting (`trellis dev` hands every setting to its children).
# A setting missing here is offered by every platform command.
SCOPES: dict[str, frozenset[str]] = {
    "data_dir": _CONNECT,
    "store_url": _CONNECT,
    "temporal_address": _CONNECT,
    "temporal_namespace": _CONNECT,
    "temporal_tls": _CONNECT,
    "temporal_tls_ca_file": _CONNECT,
    "temporal_tls_cert_file": _CONNECT,
    "temporal_tls_key_file": _CONNECT,
    "temporal_tls_server_name": _CONNECT,
    "temporal_port": _CONNECT,
    # The API links the console to the embedded dev server's Web UI on this port.
    "ui_port": _API,
    # Only `trellis dev` starts the dev server.
    "temporal_metrics_port": _DEV,
    "temporal_http_api_port": _DEV,
    "temporal_ui_url": _API,
    "api_host": _API,
    "api_port": _API,
    "api_workers": _API,
    "max_body_bytes": _API,
    "max_response_bytes": _API,
    "max_payload_bytes": _SERVE,
    "payload_offload_bytes": _SERVE,
    "default_gate_timeout_seconds": _API,
    "auth_mode": _API,
    "jwt_secret": _API_AND_TOKEN,
    "jwt_jwks_url": _API,
    "jwt_issuer": _API_AND_TOKEN,
    "jwt_audience": _API_AND_TOKEN,
    "jwt_scopes_claim": _API_AND_TOKEN,
    "jwt_roles_claim": _API_AND_TOKEN,
    "jwt_name_claim": _API_AND_TOKEN,
    "task_queue": _SERVE,
    "executors_file": _SERVE,
    "catalog_refresh_seconds": _SERVE,
    "reconcile_interval_seconds": _WORKER,
    "a2a_task_sweep_seconds": _WORKER,
    "run_retention_days": _WORKER,
    "worker_shutdown_grace_seconds": _WORKER,
    "worker_max_cached_workflows": _WORKER,
    "worker_metrics_port": _WORKER,
    "worker_metrics_host": _WORKER,
    "api_shutdown_grace_seconds": _API,
    "read_cache_bytes": _API,
    "max_schedules_per_workflow": _API,
    "http_allowed_networks": _WORKER,
    "http_max_response_bytes": _WORKER,
}
for _name in Settings.model_fields:
    if _name.startswith("service_token_"):
        SCOPES.setdefault(_name, _WORKER)

# One line of help per setting (the README's table says more).
HELP: dict[str, str] = {
    "data_dir": "data directory (SQLite store, Temporal database)",
    "store_url": "document store: sqlite:///abs/file.db or mongodb://host/db",
    "temporal_address": "use this Temporal cluster (host:port, [IPv6]:port), start no dev server",
    "temporal_namespace": "Temporal namespace",
    "temporal_tls": "TLS to the Temporal cluster (unset: on when TRELLIS_TEMPORAL_API_KEY is set)",
    "temporal_tls_ca_file": "CA (PEM) that signed the cluster's certificate; turns TLS on",
    "temporal_tls_cert_file": "client certificate (PEM) for mTLS, with the key file; TLS on",
    "temporal_tls_key_file": "client certificate's private key (PEM) for mTLS; TLS on",
    "temporal_tls_server_name": "name the cluster's certificate is checked against (and SNI)",
    "temporal_port": "embedded Temporal dev server's gRPC port",
    "ui_port": "embedded Temporal Web UI port (the console links runs to it)",
    "temporal_metrics_port": "embedded Temporal dev server's /metrics port (unset: a free one)",
    "temporal_http_api_port": "embedded Temporal dev server's HTTP API port (unset: a free one)",
    "temporal_ui_url": "Temporal Web UI the console links runs to",
    "api_host": "address the API binds to",
    "api_port": "API port",
    "api_workers": "API processes sharing the port (uvicorn workers)",
    "max_body_bytes": "largest accepted request body (413 above; default: payload limit + 1 MiB)",
    "max_response_bytes": "most node runs (as stored) one answer carries (400 above)",
    "max_payload_bytes": "largest step output (a run input is bounded by the body limit)",
    "payload_offload_bytes": "payloads above this are kept in the store, not in Temporal (≤ 1 MiB)",
    "default_gate_timeout_seconds": "gate timeout when a node sets none",
    "auth_mode": "dev (no token, loopback only) or jwt (a bearer token on every request)",
    "jwt_jwks_url": "identity provider's key set (RS256/ES256 tokens)",
    "jwt_issuer": "token issuer (iss) the API requires, when set",
    "jwt_audience": "token audience (aud) the API requires, when set",
    "jwt_scopes_claim": "claim holding the scopes (a dotted path reaches into objects)",
    "jwt_roles_claim": "claim holding the roles",
    "jwt_name_claim": "claim holding the display name",
    "task_queue": "Temporal task queue",
    "executors_file": "executor catalog (YAML or JSON)",
    "catalog_refresh_seconds": "how often MCP tool lists and A2A cards are refreshed",
    "reconcile_interval_seconds": "how often open runs are compared with Temporal",
    "a2a_task_sweep_seconds": "how often A2A tasks left by lost steps are cancelled",
    "run_retention_days": "delete runs that ended this many days ago (unset or 0: keep all)",
    "worker_shutdown_grace_seconds": "on SIGTERM, how long in-flight steps may finish",
    "worker_max_cached_workflows": "workflows kept in the worker's memory (sticky cache, ≤ 10^6)",
    "worker_metrics_port": "serve the worker's Prometheus /metrics on this port",
    "worker_metrics_host": "address the worker's /metrics binds to",
    "api_shutdown_grace_seconds": "on SIGTERM, how long open requests may finish",
    "read_cache_bytes": "run details and run pages kept per API process to answer again (0: off)",
    "max_schedules_per_workflow": "schedules one workflow may have (a create past it is 409)",
    "http_allowed_networks": "CIDR networks builtin:http may reach besides public ones",
    "http_max_response_bytes": "the most of an answer builtin:http reads",
    "service_token_key_file": "file holding the service-token signing key",
    "service_token_algorithm": "service-token signing algorithm",
    "service_token_issuer": "service-token issuer (iss)",
    "service_token_audience": "service-token audience (aud)",
    "service_token_ttl_seconds": "service-token lifetime",
    "service_token_header": "header carrying the service token",
    "service_token_key_id": "service-token key id (kid)",
    "log_level": "the least level logged",
    "log_format": "log lines as text or JSON",
}

# Flags kept from before they were named after their setting.
ALIASES: dict[str, tuple[str, ...]] = {"temporal_namespace": ("--namespace",)}


def env_name(name: str) -> str:
    return f"TRELLIS_{name.upper()}"


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def is_secret(info: FieldInfo) -> bool:
    return SecretStr in _members(info.annotation)


def _members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def scope(name: str) -> frozenset[str]:
    return SCOPES.get(name, frozenset(PLATFORM_COMMANDS))


def settings_of(command: str) -> Iterator[tuple[str, FieldInfo]]:
    """The settings `command` reads, in the order Settings declares them."""
    for name, info in Settings.model_fields.items():
        if command in scope(name):
            yield name, info


def _default_text(info: FieldInfo) -> str:
    default = info.default
    if default is None or default == ():
        return "unset"
    return str(default)


def _click_type(info: FieldInfo) -> Any:
    kinds = [k for k in _members(info.annotation) if k is not type(None)]
    kind = kinds[0] if len(kinds) == 1 else str
    if get_origin(kind) is Literal:
        return OneOf([str(v) for v in get_args(kind)])
    if kind is int:
        return AsTyped(click.INT)
    if kind is float:
        return AsTyped(click.FLOAT)
    if kind is Path:
        # As typed (a str): Settings sees an empty value as empty, not as Path("") (".").
        return click.Path()
    return click.STRING


class AsTyped(click.ParamType[Any, Any]):
    """A number flag passed on as the user typed it: Settings converts and checks it, so a
    value it refuses is one line in the settings' words, quoted as written (`'0'`, not
    click's `'0.0'`), beside every other bad setting (click's own usage error for `abc`
    stopped before those, in its own three lines)."""

    def __init__(self, number: click.ParamType[Any, Any]) -> None:
        self.name = number.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value


class OneOf(click.Choice[str]):
    """A choice flag (its help lists the choices) whose value Settings checks, as
    AsTyped's; one given in another case is the choice (`DEBUG` is `debug`)."""

    def __init__(self, choices: list[str]) -> None:
        super().__init__(choices, case_sensitive=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        found = [c for c in self.choices if str(c).lower() == str(value).lower()]
        return found[0] if found else value


def settings_flags(command: str) -> Callable[[F], F]:
    """Decorate a command with a flag for each (non-secret) setting it reads."""

    def decorate(func: F) -> F:
        for name, info in reversed(list(settings_of(command))):
            if is_secret(info):
                continue
            text = f"[env {env_name(name)}; default {_default_text(info)}]"
            if name in HELP or info.description:
                text = f"{HELP.get(name) or info.description} {text}"
            if _members(info.annotation)[0] is bool:
                flag = flag_name(name)
                decls = [f"{flag}/--no-{flag[2:]}"]
                func = click.option(*decls, name, default=None, cls=OnOffFlag, help=text)(func)
                continue
            decls = [flag_name(name), *ALIASES.get(name, ())]
            func = click.option(*decls, name, type=_click_type(info), default=None, help=text)(func)
        return func

    return decorate


class SettingsError(Exception):
    """Settings that do not validate: one line per bad setting, naming its variable (and flag)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def settings_from(params: dict[str, Any]) -> Settings:
    """Settings from the environment, overridden by the flags given on the command line.

    SettingsError when a value is invalid; a setting that is a flag of this command (a
    key of `params`) is named by its flag and its variable.
    """
    overrides = {
        name: value
        for name, value in params.items()
        if name in Settings.model_fields and value is not None
    }
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise invalid_settings(exc, flags=params.keys()) from None


def invalid_settings(exc: ValidationError, flags: Collection[str] = ()) -> SettingsError:
    """pydantic's report on Settings as one line per bad setting, in the operator's terms."""
    lines = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        where = env_name(name)
        if name in flags:
            where = f"{flag_name(name)} / {where}"
        info = Settings.model_fields.get(name)
        # A secret (or a URL that may hold a password) is named, never shown.
        hidden = info is None or is_secret(info) or not info.repr
        value = "" if hidden else f" '{error['input']}'"
        lines.append(f"invalid value{value} for {where}: {_reason(error['msg'])}")
    return SettingsError(lines)


def _reason(message: str) -> str:
    prefixes = (("Input should ", "must "), ("String should ", "must "), ("Value error, ", ""))
    for prefix, replacement in prefixes:
        if message.startswith(prefix):
            return replacement + message[len(prefix) :]
    return message


def settings_help(command: str) -> str:
    """For `command --help`: precedence, and the secrets it reads from the environment only."""
    secrets = [env_name(n) for n, info in settings_of(command) if is_secret(info)]
    lines = ["\b", "Each flag overrides its TRELLIS_* variable, which overrides the default."]
    if command in PLATFORM_COMMANDS:
        lines.append("A TRELLIS_* variable spelt like a setting but not one is refused (a typo);")
        lines.append("any other that is no setting is named in a warning.")
    if secrets:
        lines.append("Secrets have no flag (they would show in a process list); environment only:")
        lines += [f"  {name}" for name in secrets]
    return "\n".join(lines)


def settings_overview(clients: Sequence[click.Command] = ()) -> str:
    """Which command reads which setting, for `trellis --help`; `clients` are the commands
    that talk to the API, whose own variables (their options' `envvar`) are listed too."""
    lines = ["\b", "Settings per command (environment variables; flags of the same name):"]
    for name in Settings.model_fields:
        commands = ", ".join(c for c in SETTINGS_COMMANDS if c in scope(name))
        lines.append(f"  {env_name(name):<40} {commands}")
    readers: dict[str, list[str]] = {}
    for command in clients:
        for variable in _envvars(command):
            readers.setdefault(variable, []).append(command.name or "")
    for variable, names in readers.items():
        lines.append(f"  {variable:<40} {', '.join(names)}")
    return "\n".join(lines)


def _envvars(command: click.Command) -> list[str]:
    """The variables a command or any of its subcommands reads, in the order declared."""
    found = [p.envvar for p in command.params if isinstance(p.envvar, str)]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found += _envvars(sub)
    return list(dict.fromkeys(found))
