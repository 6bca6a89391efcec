"""The credentials a catalog gives its servers and agents, masked out of what Trellis keeps.

A tool or an agent may quote one in its own error text (`upstream refused token …`, an
HTTP error body echoing a header); that text became a node run's error, the run's
`errorSummary`, its events, Temporal's history and the worker's log lines, in full.
`Catalog.redacted` masks every value found here in every error an MCP or A2A executor
keeps, whichever server or agent quoted it. A tool's or an agent's successful output is
the user's data and is never masked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, unquote

from activities.executors.catalog_env import variables_in
from activities.executors.catalog_file import MIN_SECRET_CHARS, CatalogFile
from activities.executors.endpoint import split_userinfo
from activities.executors.url_mask import MASK, password_of, user_only_of
from activities.secret_text import CREDENTIAL_HEADER


def catalog_secrets(file: CatalogFile, environ: Mapping[str, str]) -> list[str]:
    """Every credential the catalog gives: each credential header's value (and the token
    after an `Authorization` scheme), each `env` value, a URL's password or lone user name
    and its query values, and each environment variable resolved into any of those or
    into a `command`.
    Longest first (a shorter may be part of a longer); values under MIN_SECRET_CHARS are
    left, as in a stdio server's stderr: too short to be a credential, and masking `1`
    or `yes` would garble every message."""
    return _given(file, environ, all_env=True)


def logged_secrets(file: CatalogFile, environ: Mapping[str, str]) -> list[str]:
    """What every log line and span masks, whoever wrote it: `catalog_secrets` but a stdio
    server's plain `env` settings. An error a step keeps is masked of every `env` value;
    every line of the process masked of `MODE: isolated` or `LEVEL: info` would lose those
    words wherever they appear."""
    return _given(file, environ, all_env=False)


def _given(file: CatalogFile, environ: Mapping[str, str], all_env: bool) -> list[str]:
    values: set[str] = set()
    for server in file.servers:
        # Its env values (or those that are credentials), and variables resolved into them.
        values.update(server.secrets if all_env else server.credentials)
        values |= _header_secrets(file, server.headers, environ)
        if server.url:
            values |= _url_secrets(file, server.url, environ)
    for agent in file.agents:
        values |= _header_secrets(file, agent.headers, environ)
        values |= _url_secrets(file, agent.url, environ)
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def secrets_masked(text: str, secrets: Iterable[str]) -> str:
    """`text` with each of `secrets` (longest first) shown as `***`."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


# Headers that say how a message is written or read, never who may send it.
_PLAIN_HEADERS = (
    "accept",
    "content-",
    "user-agent",
    "cache-control",
    "pragma",
    "mcp-protocol-version",
)
# A literal value of a header whose name names no credential is one when it is this long:
# `X-Custom-Cred: literal-s3cret` was kept in full; `X-Mode: fast` is no secret, and masking
# it would garble every message that says "fast".
MIN_UNNAMED_SECRET_CHARS = 8


def _header_secrets(
    file: CatalogFile, headers: Mapping[str, str], environ: Mapping[str, str]
) -> set[str]:
    """The values of headers whose name says they carry a credential (`Authorization`,
    `X-Api-Key`, a cookie, a token), every other header's value of 8 characters or more
    but those of the plain headers (`Accept: application/json`, `User-Agent`), and every
    variable resolved into any header."""
    values: set[str] = set()
    for name, value in headers.items():
        if CREDENTIAL_HEADER.search(name):
            values.add(value)
            scheme, space, credential = value.partition(" ")
            if space and scheme.isalpha():  # `Bearer <token>`: the token may be quoted alone
                values.add(credential.strip())
        elif len(value) >= MIN_UNNAMED_SECRET_CHARS and not name.lower().startswith(_PLAIN_HEADERS):
            values.add(value)
        values |= _resolved(file.written(value), environ)
    return values


def _url_secrets(file: CatalogFile, url: str, environ: Mapping[str, str]) -> set[str]:
    """A URL's credentials: its user info's and query's values, and the variables the file
    resolved into those parts (not its host or path: they say where, which errors show)."""
    values = {v for v in (password_of(url), user_only_of(url)) if v}
    values |= {unquote(v) for v in values}
    values |= {v for _, v in parse_qsl(url.partition("#")[0].partition("?")[2])}
    written = file.written(url)
    userinfo = split_userinfo(written)[1] or ""
    query = written.partition("?")[2]
    return values | _resolved(userinfo, environ) | _resolved(query, environ)


def _resolved(written: str, environ: Mapping[str, str]) -> set[str]:
    return {environ[name] for name in variables_in(written) if name in environ}
