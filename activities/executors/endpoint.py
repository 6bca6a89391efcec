"""Where a catalog entry's requests go, and the credentials they carry there.

A password written into an entry's URL (`http://bob:pw@host/mcp`) is a credential: it goes
as HTTP Basic auth, an `Authorization` header beside the entry's `headers`, and the URL the
MCP and A2A clients are given carries no user info. Given the URL as written, they sent
nothing: an httpx client with an `auth` of its own (theirs adds the service token) ignores
a URL's user info, and the SDKs' debug lines quoted the URL, password and all.

The credentials belong to the entry's origin (scheme, host, port): docs/security.md.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

import httpx

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """A URL's scheme, host and port (the scheme's default when none is written)."""

    scheme: str
    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + (f":{self.port}" if self.port is not None else "")


def origin_of(url: str | httpx.URL) -> Origin | None:
    """The origin of `url`; None when it is no URL httpx can send a request to."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except httpx.InvalidURL:
        return None
    if not parsed.host:
        return None
    return Origin(parsed.scheme, parsed.host, parsed.port or DEFAULT_PORTS.get(parsed.scheme))


def split_userinfo(url: str) -> tuple[str, str | None]:
    """`url` without its user info, as written otherwise; and the user info (None: none)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url, None
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    userinfo, at, hosts = rest[:end].rpartition("@")
    if not at:
        return url, None
    return f"{scheme}://{hosts}{rest[end:]}", userinfo


def basic_authorization(userinfo: str) -> str:
    """The `Authorization` value of HTTP Basic auth for `user:password` as a URL writes it
    (percent-encoded, as a browser or curl reads it)."""
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    return f"Basic {base64.b64encode(pair).decode('ascii')}"


def userinfo_conflict(url: str, headers: Mapping[str, str]) -> str | None:
    """Why an entry cannot be used when its URL's user info and its headers both set
    `Authorization` (None when they do not). Neither value is quoted."""
    _, userinfo = split_userinfo(url)
    named = next((name for name in headers if name.lower() == "authorization"), None)
    if not userinfo or named is None:
        return None
    return (
        f"url's user info is sent as Basic auth (an Authorization header) and headers.{named}"
        " sets Authorization too: keep one of them"
    )


@dataclass(frozen=True, repr=False)
class Endpoint:
    """An entry's URL without user info, its origin, and the headers its requests carry
    there: the entry's `headers` plus `Authorization: Basic …` from the user info."""

    name: str
    url: str
    origin: Origin | None
    headers: Mapping[str, str]

    @classmethod
    def of(cls, name: str, url: str, headers: Mapping[str, str]) -> Endpoint:
        plain, userinfo = split_userinfo(url)
        sent = dict(headers)
        if userinfo:  # a catalog entry setting both is refused at load (`userinfo_conflict`)
            sent["Authorization"] = basic_authorization(userinfo)
        return cls(name=name, url=plain, origin=origin_of(plain), headers=sent)

    def __repr__(self) -> str:  # the headers are credentials
        return f"Endpoint(name={self.name!r}, origin={self.origin})"
