"""API request latency by route template and status (`trellis_http_request_duration_seconds`).

The route label is the template a request matched (`/api/v1/workflows/{workflow_id}`), never
the raw path: raw paths hold ids, and a label per id would grow without bound. A request
no route matched is labelled `unmatched`.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts
from prometheus_client import Histogram
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RouteTemplates:
    """The template of the route that served a request, from what routing left in its scope."""

    def __init__(self, app: Any) -> None:
        # FastAPI keeps an included router's routes unprefixed; their contexts know the
        # path as served.
        self._api: dict[int, str] = {}
        for context in iter_route_contexts(app.routes):
            route = context.original_route
            if isinstance(route, APIRoute) and context.path is not None:
                self._api[id(route)] = context.path
        # App-level routes without parameters (/openapi.json, /docs) set no route in scope.
        self._static = frozenset(
            r.path for r in app.routes if isinstance(r, Route) and "{" not in r.path
        )

    def of(self, scope: Scope) -> str:
        route = scope.get("route")
        if isinstance(route, APIRoute):
            return self._api.get(id(route), route.path)
        if route is not None and hasattr(route, "path_format"):
            # A route of a mounted app (the console): its mount point is the root path.
            return f"{scope.get('root_path', '')}{route.path_format}"
        path = scope.get("path", "")
        return path if path in self._static else UNMATCHED


class RequestMetricsMiddleware:
    """Observes each HTTP request's duration, from arrival to its last byte sent."""

    def __init__(self, app: ASGIApp, histogram: Histogram, root: Any) -> None:
        self.app = app
        self.histogram = histogram
        # The FastAPI app whose routes name the templates (read at the first request,
        # once every route is in place).
        self.root = root
        self._templates: RouteTemplates | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            if self._templates is None:
                self._templates = RouteTemplates(self.root)
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = self._templates.of(scope)
            elapsed = time.perf_counter() - started
            self.histogram.labels(method, route, str(status)).observe(elapsed)
