"""A step's own headers go to its URL's origin only, not along a redirect to another one.

A step's `headers` often carry credentials (`X-Api-Key`, a custom token), and the URL
it redirects to may be anyone's. httpx drops only `Authorization` (and keeps it on an
http→https upgrade), so the request names its own headers and its origin in an extension
httpx carries to every redirect; the client's request hook removes those headers from a
request to another origin (scheme, host or port). Once removed they stay removed: the
next redirect copies that request's headers, even one back to the first origin.
Headers that describe the request itself (Host, which httpx sets to the new origin, and
the body's Content-*) go on: they are no credential, and without them the request is
malformed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx

_EXTENSION = "trellis.step_headers"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_THE_REQUESTS_OWN = frozenset(
    {"host", "content-type", "content-length", "content-encoding", "transfer-encoding"}
)


def step_headers(url: str, names: Iterable[str]) -> dict[str, Any]:
    """The request extension naming `names` as the step's own headers, for `url`'s origin."""
    own = tuple(n for n in names if n.lower() not in _THE_REQUESTS_OWN)
    return {_EXTENSION: (_origin(httpx.URL(url)), own)}


async def drop_off_origin(request: httpx.Request) -> None:
    """httpx's request hook: runs before the first request and every redirect."""
    mark = request.extensions.get(_EXTENSION)
    if mark is None:
        return
    origin, names = mark
    if _origin(request.url) != origin:
        for name in names:
            request.headers.pop(name, None)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)
