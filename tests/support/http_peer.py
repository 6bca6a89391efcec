"""A real HTTP service for steps to call through `builtin:http`: echoes, flaky and failing routes.

It counts every call per route key, so tests can assert how often a step really ran.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class HttpPeer:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.app = Starlette(
            routes=[
                Route("/echo/{key}", self._echo, methods=["GET", "POST"]),
                Route("/flaky/{key}", self._flaky, methods=["GET", "POST"]),
                Route("/status/{code:int}", self._status, methods=["GET", "POST"]),
                Route("/refuses-auth", self._refuses_auth, methods=["GET", "POST"]),
                Route("/slow/{key}", self._slow, methods=["GET", "POST"]),
            ]
        )

    async def _body(self, request: Request) -> Any:
        raw = await request.body()
        return await request.json() if raw else None

    async def _echo(self, request: Request) -> JSONResponse:
        key = request.path_params["key"]
        self.calls[key] += 1
        return JSONResponse(
            {
                "key": key,
                "calls": self.calls[key],
                "body": await self._body(request),
                "idempotencyKey": request.headers.get("idempotency-key"),
                "traceparent": request.headers.get("traceparent"),
            }
        )

    async def _flaky(self, request: Request) -> JSONResponse:
        """Fails with 503 for the first `failures` calls of a key, then succeeds."""
        key = request.path_params["key"]
        self.calls[key] += 1
        failures = int(request.query_params.get("failures", "1"))
        if self.calls[key] <= failures:
            return JSONResponse({"error": f"flaky failure {self.calls[key]}"}, status_code=503)
        return JSONResponse({"key": key, "calls": self.calls[key]})

    async def _status(self, request: Request) -> JSONResponse:
        code = request.path_params["code"]
        self.calls[f"status-{code}"] += 1
        return JSONResponse({"error": f"status {code}"}, status_code=code)

    async def _refuses_auth(self, request: Request) -> JSONResponse:
        """401, quoting the `Authorization` it was sent (a server echoing a credential)."""
        said = request.headers.get("authorization")
        return JSONResponse({"error": f"Authorization: {said} rejected"}, status_code=401)

    async def _slow(self, request: Request) -> JSONResponse:
        key = request.path_params["key"]
        self.calls[key] += 1
        await asyncio.sleep(float(request.query_params.get("seconds", "1")))
        return JSONResponse({"key": key})
