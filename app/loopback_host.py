"""Dev mode answers only requests addressed to this machine.

Dev mode has no authentication: it is safe only because it listens on loopback. A web
page on another site can still reach a loopback port through the browser: DNS
rebinding points the page's own name at 127.0.0.1, and the browser then sends the
page's requests, and reads their answers, as same-origin. Those requests carry the
page's name in `Host`, so a `Host` that does not name this machine is refused (as
Jupyter and others do).

A page on another site may also send a form's POST to a loopback port without rebinding
(no preflight, the answer unread): to a body-less control route (cancel, pause) that
was enough. Browsers name the page's origin in `Origin` on every POST, so a change whose
`Origin` is another machine's is refused too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import error_response
from app.platform.preflight import is_loopback


def names_this_machine(host_header: str) -> bool:
    """Whether `Host` (with or without its port) is a loopback address or localhost.

    What follows the name must be a port and nothing else: `[::1]evil.com` and
    `127.0.0.1:80@evil.com` named this machine by their first part alone."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        end = host.find("]")
        if end < 0:
            return False
        host, rest = host[1:end], host[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return False
    elif host.count(":") == 1:  # 127.0.0.1:8000, localhost:8000
        host, port = host.split(":", 1)
        if not port.isdigit():
            return False
    return host.endswith(".localhost") or is_loopback(host.rstrip("."))


# Methods a page on another site can send with no preflight, given a form or a fetch.
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _refusal(scope: Scope) -> str | None:
    """Why a request is refused, or None."""
    headers = Headers(scope=scope)
    host = headers.get("host")
    if host is not None and not names_this_machine(host):
        return (
            "TRELLIS_AUTH_MODE=dev answers only requests addressed to this machine "
            "(Host: 127.0.0.1, localhost or [::1]); set TRELLIS_AUTH_MODE=jwt to "
            "serve other names"
        )
    origin = headers.get("origin")
    if scope["method"] not in _SAFE_METHODS and origin is not None:
        # "null" (a sandboxed page, a file) names no machine either.
        if not names_this_machine(urlsplit(origin).netloc):
            return (
                f"TRELLIS_AUTH_MODE=dev takes changes only from pages on this machine, not "
                f"from Origin {origin[:100]!r}; set TRELLIS_AUTH_MODE=jwt to serve others"
            )
    return None


class LoopbackHostMiddleware:
    """Refuse (403) a request whose `Host`, or a change whose `Origin`, names another
    machine."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (why := _refusal(scope)) is not None:
            await error_response(403, "forbidden", why)(scope, receive, send)
            return
        await self.app(scope, receive, send)
