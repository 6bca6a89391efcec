"""Built-in executors, namespaced `builtin:…` so they never collide with tool or agent names.

- `builtin:echo` and `builtin:transform` are pure: the interpreter evaluates them inline;
  here they serve direct calls, through the one implementation in
  `temporal_workflows/builtins.py`.
- `builtin:http` sends one HTTP request; non-2xx fails the attempt, 4xx permanently.
- `builtin:delay` sleeps `config.seconds`, heartbeating, and stops promptly when cancelled.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from activities.executors.base import PermanentError, StepCall, StepOutcome, TransientError
from temporal_workflows.builtins import ECHO, TRANSFORM, BuiltinError, echo, transform

HTTP, DELAY = "builtin:http", "builtin:delay"
BUILTIN_KEYS = frozenset({ECHO, TRANSFORM, HTTP, DELAY})
# Retrying these 4xx can succeed (timeout, rate limit), so they stay retryable.
_RETRYABLE_4XX = {408, 425, 429}
MAX_DELAY_SECONDS = 7 * 86_400


class BuiltinExecutor:
    """Runs the built-ins; holds the HTTP client `builtin:http` reuses."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http

    async def execute(self, call: StepCall) -> StepOutcome:
        key = call.executor_key
        handlers = {ECHO: _echo, TRANSFORM: _transform, DELAY: _delay}
        if key == HTTP:
            output = await self._request(call)
        elif key in handlers:
            output = await handlers[key](call)
        else:
            raise PermanentError(f"unknown built-in {key!r}")
        return StepOutcome(output=output, resolved_executor={"kind": "builtin", "key": key})

    async def _request(self, call: StepCall) -> dict[str, Any]:
        cfg = call.config
        url = cfg.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise PermanentError("builtin:http needs config.url, an http(s) URL")
        method = str(cfg.get("method", "GET")).upper()
        headers = cfg.get("headers") or {}
        if not isinstance(headers, dict):
            raise PermanentError("builtin:http config.headers must be an object")
        timeout = _number(cfg.get("timeout", 30), "timeout")
        kwargs: dict[str, Any] = {"headers": {str(k): str(v) for k, v in headers.items()}}
        if "json" in cfg:
            kwargs["json"] = cfg["json"]
        try:
            response = await self._http.request(method, url, timeout=timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise TransientError(f"{method} {url} failed: {type(exc).__name__}: {exc}") from exc
        body = _body(response)
        if response.is_success:
            return {"status": response.status_code, "headers": dict(response.headers), "body": body}
        message = f"{method} {url} returned {response.status_code}: {str(body)[:500]}"
        if 400 <= response.status_code < 500 and response.status_code not in _RETRYABLE_4XX:
            raise PermanentError(message)
        raise TransientError(message)


async def _echo(call: StepCall) -> dict[str, Any]:
    return echo(call.config, call.context.get("input"))


async def _transform(call: StepCall) -> dict[str, Any]:
    try:
        return transform(call.config, call.context)
    except BuiltinError as exc:
        raise PermanentError(str(exc)) from None


async def _delay(call: StepCall) -> dict[str, Any]:
    seconds = _number(call.config.get("seconds", 1), "seconds")
    if seconds > MAX_DELAY_SECONDS:
        raise PermanentError(f"builtin:delay seconds must be at most {MAX_DELAY_SECONDS}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # Short sleeps between heartbeats; cancellation interrupts asyncio.sleep at once.
    while (left := deadline - loop.time()) > 0:
        call.heartbeat({"remainingSeconds": round(left, 3)})
        await asyncio.sleep(min(1.0, left))
    return {"sleptSeconds": seconds}


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PermanentError(f"config.{name} must be a non-negative number")
    return float(value)


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text
