"""Answer a request that the API's graceful shutdown cuts off with a 503, not uvicorn's 500.

On SIGTERM uvicorn lets open requests run for `TRELLIS_API_SHUTDOWN_GRACE_SECONDS`, then
cancels their tasks; a request that had not begun its response (an approval or a pause
waiting for a worker, say) was answered by uvicorn with a plain-text "500 Internal Server
Error". That reads as a bug in the request, and a careful client does not repeat a 500.
It is the platform going away: answer 503 `service_unavailable` in the one error body,
with `Retry-After`, so the client repeats it against the next API (every such request is
safe to repeat: triggers, retries, reruns and replays with their `Idempotency-Key`,
decisions answer 409 once applied).
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import error_response

log = logging.getLogger("trellis.api")

CUT_OFF_MESSAGE = (
    "The API shut down before this request finished; it may or may not have taken effect. "
    "Repeat it once an API answers: with the same Idempotency-Key it is applied once and "
    "answered as the first was; a decision, pause or resume repeated without one answers 409 "
    "once applied."
)


class ShutdownAnswerMiddleware:
    """A request cancelled before its response began is answered 503 (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            if started:
                raise  # a response under way (an event stream): nothing to answer
            log.warning(
                "%s %s cut off by the shutdown grace period; answered 503",
                scope.get("method"),
                scope.get("path"),
            )
            response = error_response(503, "service_unavailable", CUT_OFF_MESSAGE)
            response.headers["Retry-After"] = "1"
            response.headers["Connection"] = "close"
            # The task ends here: its cancellation was the shutdown's, and it is answered.
            await response(scope, receive, send)
