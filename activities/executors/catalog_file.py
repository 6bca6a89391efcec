"""The executor catalog file (`TRELLIS_EXECUTORS_FILE`, YAML or JSON; see docs/executors.md).

These models describe the file only. `/servers` and `/agents` show `catalog_models.py`,
built from them field by field, so a value kept here (`headers`, `env`) is never echoed
back; values are shown as the file wrote them (`${VAR}` unresolved, `CatalogFile.written`).
"""

from __future__ import annotations

import contextlib
import json
import math
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
from activities.executors.catalog_url import url_problem
from activities.executors.endpoint import Endpoint, userinfo_conflict
from activities.secret_names import is_credential_name
from activities.yaml_problem import yaml_problem

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


def _usable_url(url: str) -> str:
    if problem := url_problem(url):
        raise ValueError(problem)
    return url


# Checked as resolved (after `${VAR}`s): what the clients will be given.
Url = Annotated[Text, AfterValidator(_usable_url)]
# A number is written as its digits.
Value = Annotated[str, Field(coerce_numbers_to_str=True)]
HeaderName = Annotated[str, _check(_HEADER_NAME.fullmatch, "is not an HTTP header name")]
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
    id: Annotated[
        Text, _check(_SERVER_ID.fullmatch, "may hold letters, digits, '_', '.', '-' only")
    ]
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
        url, command = self.url is not None, self.command is not None
        problems = _transport_problems(url, command, bool(self.headers), bool(self.env))
        if self.url is not None and (conflict := userinfo_conflict(self.url, self.headers)):
            problems.append(conflict)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # The environment's values resolved into `env` (`read_catalog_file`).
    _given: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def transport(self) -> str:
        return "streamable-http" if self.url else "stdio"

    @property
    def endpoint(self) -> Endpoint:
        """Where a URL server's requests go and what they carry (its user info as Basic)."""
        assert self.url is not None, "a stdio server has no endpoint"
        return Endpoint.of(self.id, self.url, self.headers)

    @property
    def credentials(self) -> set[str]:
        """The `env` values that are credentials by how they were given: each environment
        variable resolved into `env` or `command`, and each value under a credential's name
        (`API_TOKEN: abc…`). A plain setting (`MODE: isolated`) is not one."""
        named = {v for k, v in self.env.items() if is_credential_name(k)}
        return {v for v in {*named, *self._given} if len(v) >= MIN_SECRET_CHARS}

    @property
    def secrets(self) -> list[str]:
        """What a stdio server's stderr is never shown with: each `env` value and each
        environment variable resolved into one or into its `command`, longest first (a
        shorter may be part of a longer). Values under MIN_SECRET_CHARS are left: too
        short to be a credential, and masking `1` would garble every line."""
        values = {*self.env.values(), *self._given}
        return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def _transport_problems(url: bool, command: bool, headers: bool, env: bool) -> list[str]:
    """What is wrong with a server's transport, given which of its keys are set."""
    problems = []
    if url == command:
        problems.append("needs exactly one of url (streamable HTTP) or command (stdio)")
    if headers and not url:
        problems.append("headers are for url servers; a stdio server takes env")
    if env and not command:
        problems.append("env is for command (stdio) servers; a url server takes headers")
    return problems


class A2AAgentSpec(_FileModel):
    name: Text
    url: Url
    headers: Headers = Field(default={}, repr=False)

    @model_validator(mode="after")
    def _one_authorization(self) -> A2AAgentSpec:
        if conflict := userinfo_conflict(self.url, self.headers):
            raise ValueError(conflict)
        return self

    @property
    def endpoint(self) -> Endpoint:
        """Where the agent's card is asked for and what requests to its origin carry."""
        return Endpoint.of(self.name, self.url, self.headers)


def _repeats(key: str, values: list[str]) -> str | None:
    counts = Counter(values)
    if repeated := sorted(name for name, count in counts.items() if count > 1):
        return f"repeats the {key}(s) {', '.join(repeated)}"
    return None


def _unique(key: str) -> AfterValidator:
    def check(entries: list[Any]) -> list[Any]:
        if problem := _repeats(key, [getattr(entry, key) for entry in entries]):
            raise ValueError(problem)
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
    except json.JSONDecodeError as exc:  # says where, never what is there
        raise fail(f"invalid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise fail(f"invalid YAML{yaml_problem(exc)}") from None
    if not isinstance(data, dict | None):
        raise fail("the top level must be a mapping with mcpServers and/or a2aAgents")
    try:
        data, written, given = interpolate(_split_commands(data or {}), environ or {})
    except InterpolationError as exc:
        raise fail(str(exc)) from None
    try:
        file = CatalogFile.model_validate(data, by_name=False)
    except ValidationError as exc:
        raise fail(_one_line(exc, data)) from None
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
# The key each section's entries must not repeat.
_KEYS = {"mcpServers": "id", "a2aAgents": "name"}


def _one_line(exc: ValidationError, data: dict[str, Any]) -> str:
    """Every problem as `where: what`, in the file's order; unknown keys first, with the
    keys allowed there."""
    unknown: dict[tuple[Any, ...], list[str]] = {}
    found: list[tuple[tuple[Any, ...], str]] = []
    for error in exc.errors():
        loc, kind = error["loc"], error["type"]
        if kind == "extra_forbidden":
            unknown.setdefault(loc[:-1], []).append(str(loc[-1]))
        elif kind == "model_type":
            found.append((loc, f"{_where(loc)} must be a mapping"))
        else:
            what = str((error.get("ctx") or {}).get("error") or error["msg"])
            found.append((loc, f"{_where(loc)}: {what[0].lower()}{what[1:]}"))
    found += _unreached([error["loc"] for error in exc.errors()], data)
    problems = [problem for _, problem in sorted(found, key=lambda item: _place(item[0]))]
    for at, keys in reversed(unknown.items()):
        fields = _SECTIONS.get(at[0] if at else None, CatalogFile).model_fields
        allowed = ", ".join(sorted(f.alias or name for name, f in fields.items()))
        where = _where(at) or "the top level"
        problems.insert(0, f"{where} has unknown key(s) {', '.join(keys)} (allowed: {allowed})")
    return "; ".join(problems)


def _unreached(
    failed: list[tuple[Any, ...]], data: dict[str, Any]
) -> list[tuple[tuple[Any, ...], str]]:
    """The rules pydantic skipped, checked on the file's own values (`failed`: where it
    found problems): a section's repeats wait for all its entries to be valid, an entry's
    own rules (a server's transport, one Authorization) for its fields."""
    found: list[tuple[tuple[Any, ...], str]] = []
    sections = {section: data.get(section) for section in _KEYS}
    for section, key in _KEYS.items():
        entries = sections[section]
        if not isinstance(entries, list) or not any(
            len(loc) > 1 and loc[0] == section for loc in failed
        ):
            continue  # no entry failed (or no list): pydantic checked all there is
        given = [
            e[key].strip() for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)
        ]
        if problem := _repeats(key, [name for name in given if name]):
            found.append(((section,), f"{section}: {problem}"))
    for section, entries in sections.items():
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            at = (section, i)
            fields_failed = any(len(loc) > 2 and loc[:2] == at for loc in failed)
            if isinstance(entry, dict) and fields_failed and at not in failed:
                problems = _entry_rules(section, entry)
                found += [(at, f"{section}[{i}]: {problem}") for problem in problems]
    return found


def _entry_rules(section: str, entry: dict[str, Any]) -> list[str]:
    """An entry's own rules (a server's transport, one Authorization), on its file values."""
    problems = []
    if section == "mcpServers":
        problems += _transport_problems(
            entry.get("url") is not None,
            entry.get("command") is not None,
            bool(entry.get("headers")),
            bool(entry.get("env")),
        )
    url, headers = entry.get("url"), entry.get("headers")
    if isinstance(url, str) and isinstance(headers, dict):
        conflict = userinfo_conflict(url, {str(name): "" for name in headers})
        problems += [conflict] if conflict else []
    return problems


def _place(loc: tuple[Any, ...]) -> tuple[int, float]:
    """Where a problem sits in the file: by section, then entry (a section's own last)."""
    section = list(_KEYS).index(loc[0]) if loc and loc[0] in _KEYS else len(_KEYS)
    entry = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else math.inf
    return section, entry


def _where(loc: tuple[Any, ...]) -> str:
    """`a2aAgents[0].headers.X-A`: a key that is no plain name is quoted (`'X-A\\n'`), so
    the start-up error stays one line; pydantic's `[key]` (the key itself failed) is said
    as `(the name)`."""
    parts = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif p == "[key]":
            parts.append(" (the name)")
        else:
            parts.append("." + (p if str(p).isprintable() and " " not in str(p) else repr(p)))
    return "".join(parts).lstrip(".")
