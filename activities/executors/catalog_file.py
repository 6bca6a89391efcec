"""The executor catalog file (`TRELLIS_EXECUTORS_FILE`, YAML or JSON; see docs/executors.md).

These models describe the file only. `/servers` and `/agents` show `catalog_models.py`,
built from them field by field, so a value kept here (`headers`, `env`) is never echoed
back; values are shown as the file wrote them (`${VAR}` unresolved, `CatalogFile.written`).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from activities.executors.catalog_env import InterpolationError, interpolate

# Server ids prefix tool names (`serverId/toolName`), so they must not contain a slash.
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# An HTTP header name (RFC 9110 token).
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


class CatalogError(ValueError):
    """A catalog file that cannot be used; the message names the file and the problem."""


def _check(test: Callable[[str], object], problem: str) -> AfterValidator:
    def check(value: str) -> str:
        if not test(value):
            raise ValueError(problem)
        return value

    return AfterValidator(check)


def _none_is(empty: object) -> BeforeValidator:
    # `mcpServers:` with nothing under it is null in YAML: it means "none", as does `env:`.
    return BeforeValidator(lambda value: empty if value is None else value)


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Word = Annotated[str, StringConstraints(min_length=1)]
Url = Annotated[
    Text, _check(lambda u: u.startswith(("http://", "https://")), "must be an http(s) URL")
]
# A number is written as its digits.
Value = Annotated[str, Field(coerce_numbers_to_str=True)]
HeaderName = Annotated[str, _check(_HEADER_NAME.match, "is not an HTTP header name")]
HeaderValue = Annotated[
    Value, _check(lambda v: "\n" not in v and "\r" not in v, "must be one line")
]
# Sent on every request to the server or agent (an API key, a static Authorization).
Headers = Annotated[dict[HeaderName, HeaderValue], _none_is({})]


# The shortest `env` value a stdio server's stderr lines are masked of.
MIN_SECRET_CHARS = 4


class _FileModel(BaseModel):
    # Not the camelCase wire base: the file takes exactly its documented keys (it is read
    # with by_name=False), while Python code may build a spec by field name.
    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True)


class McpServerSpec(_FileModel):
    id: Annotated[Text, _check(_SERVER_ID.match, "may hold letters, digits, '_', '.', '-' only")]
    url: Url | None = None
    # One string is split like a shell would, so a quoted argument keeps its spaces (the
    # file's are split before their `${VAR}`s resolve: `_split_commands`).
    command: Annotated[
        list[Word] | None,
        BeforeValidator(lambda v: shlex.split(v) if isinstance(v, str) else v),
        Field(min_length=1),
    ] = None
    # Tools declared in the file; None means "whatever the server lists".
    tools: list[Word] | None = None
    # A stdio server's whole environment, with PATH; a number is written as its digits.
    env: Annotated[dict[str, Value], _none_is({})] = Field(default={}, repr=False)
    headers: Headers = Field(default={}, repr=False)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.url is None) == (self.command is None):
            raise ValueError("needs exactly one of url (streamable HTTP) or command (stdio)")
        if self.headers and self.url is None:
            raise ValueError("headers are for url servers; a stdio server takes env")
        if self.env and self.command is None:
            raise ValueError("env is for command (stdio) servers; a url server takes headers")
        return self

    # The environment's values resolved into `env` (`read_catalog_file`).
    _given: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def transport(self) -> str:
        return "streamable-http" if self.url else "stdio"

    @property
    def secrets(self) -> list[str]:
        """What a stdio server's stderr is never shown with: each `env` value and each
        environment variable resolved into one or into its `command`, longest first (a
        shorter may be part of a longer). Values under MIN_SECRET_CHARS are left: too
        short to be a credential, and masking `1` would garble every line."""
        values = {*self.env.values(), *self._given}
        return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


class A2AAgentSpec(_FileModel):
    name: Text
    url: Url
    headers: Headers = Field(default={}, repr=False)


def _unique(key: str) -> AfterValidator:
    def check(entries: list[Any]) -> list[Any]:
        counts = Counter(getattr(entry, key) for entry in entries)
        if repeated := sorted(name for name, count in counts.items() if count > 1):
            raise ValueError(f"repeats the {key}(s) {', '.join(repeated)}")
        return entries

    return AfterValidator(check)


class CatalogFile(_FileModel):
    servers: Annotated[list[McpServerSpec], _none_is([]), _unique("id")] = Field(
        [], alias="mcpServers"
    )
    agents: Annotated[list[A2AAgentSpec], _none_is([]), _unique("name")] = Field(
        [], alias="a2aAgents"
    )
    # Resolved value -> as the file wrote it, for every value that held a `${VAR}`.
    _written: dict[str, str] = PrivateAttr(default_factory=dict)

    def written(self, value: str) -> str:
        """How the file wrote a value (`${VAR}` unresolved): what the API may show."""
        return self._written.get(value, value)

    def written_command(self, spec: McpServerSpec) -> list[str] | None:
        """A server's command as the file wrote it (`${VAR}` unresolved)."""
        if spec.command is None:
            return None
        return [self.written(a) for a in spec.command]


def read_catalog_file(path: Path, environ: Mapping[str, str] | None = None) -> CatalogFile:
    """Parse, resolve `${VAR}` from `environ` and check a catalog file; raise CatalogError
    naming the file and every problem."""

    def fail(problem: str) -> CatalogError:
        return CatalogError(f"executor catalog {path}: {problem}")

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise fail("file not found") from None
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise fail(f"invalid {kind}: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict | None):
        raise fail("the top level must be a mapping with mcpServers and/or a2aAgents")
    try:
        data, written, given = interpolate(_split_commands(data or {}), environ or {})
    except InterpolationError as exc:
        raise fail(str(exc)) from None
    try:
        file = CatalogFile.model_validate(data, by_name=False)
    except ValidationError as exc:
        raise fail(_one_line(exc)) from None
    file._written.update(written)
    for server in file.servers:
        values = [*server.env.values(), *(server.command or [])]
        server._given = frozenset(g for g in given if any(g in v for v in values))
    return file


def _split_commands(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with each one-string stdio command split into arguments, before `${VAR}`s
    resolve: a value holding a space (`/tmp/my dir/server.py`) stays one argument.

    A string that does not split (an unclosed quote) is left to the model, which names it.
    """
    entries = data.get("mcpServers")
    if not isinstance(entries, list):
        return data
    split = []
    for entry in entries:
        command = entry.get("command") if isinstance(entry, dict) else None
        if isinstance(command, str):
            with contextlib.suppress(ValueError):
                entry = {**entry, "command": shlex.split(command)}
        split.append(entry)
    return {**data, "mcpServers": split}


_SECTIONS: dict[Any, type[_FileModel]] = {"mcpServers": McpServerSpec, "a2aAgents": A2AAgentSpec}


def _one_line(exc: ValidationError) -> str:
    """Every problem as `where: what`; unknown keys first, with the keys allowed there."""
    unknown: dict[tuple[Any, ...], list[str]] = {}
    problems = []
    for error in exc.errors():
        loc, kind = error["loc"], error["type"]
        if kind == "extra_forbidden":
            unknown.setdefault(loc[:-1], []).append(str(loc[-1]))
        elif kind == "model_type":
            problems.append(f"{_where(loc)} must be a mapping")
        else:
            what = str((error.get("ctx") or {}).get("error") or error["msg"])
            problems.append(f"{_where(loc)}: {what[0].lower()}{what[1:]}")
    for at, keys in reversed(unknown.items()):
        fields = _SECTIONS.get(at[0] if at else None, CatalogFile).model_fields
        allowed = ", ".join(sorted(f.alias or name for name, f in fields.items()))
        where = _where(at) or "the top level"
        problems.insert(0, f"{where} has unknown key(s) {', '.join(keys)} (allowed: {allowed})")
    return "; ".join(problems)


def _where(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
