"""Built-in executors, namespaced `builtin:…` so they never collide with tool or agent names.

- `builtin:echo` and `builtin:transform` are pure: the interpreter evaluates them inline;
  here they serve direct calls, through the one implementation in
  `temporal_workflows/builtins.py`.
- `builtin:http` sends one HTTP request (following up to 5 redirects, the step's own
  headers only within the URL's origin: `redirect_headers.py`); non-2xx fails the
  attempt, 4xx permanently. It reaches public addresses only unless the operator allows
  more, and reads at most `max_response_bytes` of the answer (`http_guard.py`).
- `builtin:delay` sleeps `config.seconds`, heartbeating, and stops promptly when cancelled.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from opentelemetry import trace

from activities.executors.base import (
    IDEMPOTENCY_HEADER,
    PermanentError,
    StepCall,
    StepOutcome,
    TransientError,
)
from activities.executors.http_guard import AddressRefused, HttpPolicy, guarded_client
from activities.executors.redirect_headers import step_headers
from activities.executors.tracing import CallTracer, trace_context, url_attribute
from activities.executors.url_mask import mask_urls, masked_url
from activities.secret_text import scrub_secrets
from temporal_workflows.builtins import ECHO, TRANSFORM, BuiltinError, echo, transform
from temporal_workflows.clock import fixed_width

HTTP, DELAY = "builtin:http", "builtin:delay"
BUILTIN_KEYS = frozenset({ECHO, TRANSFORM, HTTP, DELAY})
# Retrying these 4xx can succeed (timeout, rate limit), so they stay retryable.
_RETRYABLE_4XX = {408, 425, 429}
MAX_DELAY_SECONDS = 7 * 86_400
# What HTTP/1.1 lets a header's name be (RFC 9110's token), and the ASCII text httpx
# sends as its value: anything else would fail every attempt alike.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?")


class BuiltinExecutor:
    """Runs the built-ins; holds the guarded HTTP client `builtin:http` reuses."""

    def __init__(self, policy: HttpPolicy | None = None, calls: CallTracer | None = None) -> None:
        self.policy = policy or HttpPolicy()
        self._http = guarded_client(self.policy)
        self._calls = calls or CallTracer()

    async def close(self) -> None:
        await self._http.aclose()

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
        # Schemes are case-insensitive (RFC 3986): `HTTP://` is http, and guarded as it.
        if not isinstance(url, str) or not url[:8].lower().startswith(("http://", "https://")):
            raise PermanentError("builtin:http needs config.url, an http(s) URL")
        method = str(cfg.get("method", "GET")).upper()
        headers = cfg.get("headers") or {}
        if not isinstance(headers, dict):
            raise PermanentError("builtin:http config.headers must be an object")
        timeout = _number(cfg.get("timeout", 30), "timeout")
        if timeout == 0:  # every attempt would time out before it connected
            raise PermanentError("builtin:http config.timeout must be a positive number")
        sent = _checked_headers(headers)
        own = tuple(sent)  # the step's own headers: its origin's only (redirect_headers.py)
        # The step's key, unless the config sets its own (any capitalisation).
        if not any(k.lower() == IDEMPOTENCY_HEADER.lower() for k in sent):
            sent[IDEMPOTENCY_HEADER] = call.idempotency_key
        kwargs: dict[str, Any] = {"headers": sent}
        if "json" in cfg:
            kwargs["json"] = cfg["json"]
        # OpenTelemetry's HTTP client conventions: the method names the span.
        attributes = {"http.request.method": method, "url.full": url_attribute(url)}
        with self._calls.span(method, attributes):
            # The trace context goes on, unless the config sets its own headers for it.
            given = {k.lower() for k in sent}
            sent.update({k: v for k, v in trace_context().items() if k not in given})
            return await self._send(method, url, kwargs, seconds=timeout, own=own)

    async def _send(
        self, method: str, url: str, kwargs: dict[str, Any], *, seconds: float, own: tuple[str, ...]
    ) -> dict[str, Any]:
        try:
            extensions = step_headers(url, own)
            request = self._http.build_request(
                method, url, timeout=seconds, extensions=extensions, **kwargs
            )
        except (httpx.InvalidURL, UnicodeError) as exc:
            # UnicodeError: a host no IDNA encoding takes (`xn--localhost`), said bare.
            reason = mask_urls(str(exc), url)
            raise PermanentError(
                f"builtin:http config.url {masked_url(url)!r} is invalid: {reason}"
            ) from None
        try:
            response = await self._http.send(request, stream=True)
            try:
                content = await _read_capped(response, self.policy.max_response_bytes)
            finally:
                await response.aclose()
        except AddressRefused as exc:
            raise PermanentError(str(exc)) from None
        except httpx.TooManyRedirects:
            limit = self.policy.max_redirects
            shown = masked_url(url)
            raise PermanentError(f"{method} {shown} redirected more than {limit} times") from None
        except httpx.HTTPError as exc:
            # The error may quote the URL it was sending to: a redirect's, not only ours.
            sent = str(exc.request.url) if _has_request(exc) else ""
            # And the server's or the transport's words masked as the logs mask them.
            reason = scrub_secrets(mask_urls(str(exc), url, sent))
            raise TransientError(
                f"{method} {masked_url(url)} failed: {type(exc).__name__}: {reason}"
            ) from exc
        trace.get_current_span().set_attribute("http.response.status_code", response.status_code)
        body = _body(response, content)
        if response.is_success:
            return {"status": response.status_code, "headers": dict(response.headers), "body": body}
        shown = masked_url(url)
        # A JSON answer quoted as JSON (it read as a Python dict: {'error': 'boom'}).
        said = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        # A server may echo the `Authorization` it was sent: masked as the logs mask it,
        # whole, before the cut (a token cut short would no longer look like one).
        said = scrub_secrets(said)
        message = f"{method} {shown} returned {response.status_code}: {said[:500]}"
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
    # Until a moment, not for a span: an attempt after its worker was lost (a deploy, a
    # crash) or its timeout sleeps what is left, the time between counted; it slept the
    # whole delay again. The moment is in each heartbeat, which the next attempt reads.
    until = _earlier_until(call.earlier_progress, seconds)
    if until is None:
        until = datetime.now(UTC) + timedelta(seconds=seconds)
    stamp = fixed_width(until)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (until - datetime.now(UTC)).total_seconds()
    # Short sleeps between heartbeats; cancellation interrupts asyncio.sleep at once.
    while (left := deadline - loop.time()) > 0:
        call.heartbeat({"remainingSeconds": round(left, 3), "until": stamp})
        await asyncio.sleep(min(1.0, left))
    return {"sleptSeconds": seconds}


def _earlier_until(progress: dict[str, Any], seconds: float) -> datetime | None:
    """When an earlier attempt of this delay was to end (no later than `seconds` from now)."""
    now = datetime.now(UTC)
    whole = now + timedelta(seconds=seconds)
    try:
        until = datetime.fromisoformat(str(progress["until"]))
    except (KeyError, ValueError):
        return _left_at_last_heartbeat(progress, now, whole)
    if until.tzinfo is None:
        return _left_at_last_heartbeat(progress, now, whole)
    return min(until, whole)


def _left_at_last_heartbeat(
    progress: dict[str, Any], now: datetime, whole: datetime
) -> datetime | None:
    """From a heartbeat of a release before `until` (only `remainingSeconds`): what was
    left then, from now. When it was sent is not kept, so this sleeps the time since too,
    not the whole delay again (a deploy from such a release restarted every delay)."""
    left = progress.get("remainingSeconds")
    if isinstance(left, bool) or not isinstance(left, (int, float)) or not 0 <= left < math.inf:
        return None
    return min(now + timedelta(seconds=left), whole)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PermanentError(f"config.{name} must be a non-negative number")
    return float(value)


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """The (decoded) body, refused once it grows past `limit` bytes."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit and "content-encoding" not in response.headers:
        raise PermanentError(_too_big(response, limit))
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise PermanentError(_too_big(response, limit))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_big(response: httpx.Response, limit: int) -> str:
    request = response.request
    return (
        f"{request.method} {masked_url(str(request.url))} answered with more than {limit} bytes "
        "(TRELLIS_HTTP_MAX_RESPONSE_BYTES)"
    )


def _has_request(exc: httpx.HTTPError) -> bool:
    try:
        exc.request  # noqa: B018 - httpx raises RuntimeError when it has none
    except RuntimeError:
        return False
    return True


def _body(response: httpx.Response, content: bytes) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return content.decode(response.encoding or "utf-8", "replace")


def _checked_headers(headers: dict[Any, Any]) -> dict[str, str]:
    """The config's headers as sent, or a permanent error naming the first bad one (never
    quoting its value: it may be a secret)."""
    sent: dict[str, str] = {}
    for key, value in headers.items():
        name, text = str(key), str(value)
        if not _HEADER_NAME.fullmatch(name):
            raise PermanentError(
                f"builtin:http config.headers {name!r} is not a valid header name"
                " (letters, digits and !#$%&'*+-.^_`|~ only)"
            )
        if not _HEADER_VALUE.fullmatch(text):
            raise PermanentError(
                f"builtin:http config.headers {name!r}: a header's value must be"
                " ASCII text without line breaks, and not begin or end with a space"
            )
        sent[name] = text
    return sent
