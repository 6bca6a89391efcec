"""When a request arrived, as early as the API sees it.

A decision that names no gate opening is for one open when it arrived
(app/services/controls.py). The run's record is read later: ten confirms at once took
up to 60 ms in an API's dependencies (the caller's checks, the store) before a handler
ran, and up to 45 ms more between uvicorn parsing a request and running it (measured),
time enough for the next gate to open. The API's HTTP protocol (app/http_protocol.py)
stamps a request when its first bytes are parsed; this middleware stamps one that
another server handed over.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

ARRIVED_AT = "trellis.arrived_at"


class ArrivalMiddleware:
    """Stamps an HTTP request's arrival (UTC) in its scope, unless the protocol did."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault(ARRIVED_AT, datetime.now(UTC))
        await self.app(scope, receive, send)


def arrived_at(request: Request) -> datetime:
    """The request's arrival; now, for an app built without the middleware."""
    arrived = request.scope.get(ARRIVED_AT)
    return arrived if isinstance(arrived, datetime) else datetime.now(UTC)
