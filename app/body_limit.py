"""Reject request bodies above a size limit with 413, counting bytes as they stream in."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import error_response


class BodyTooLarge(HTTPException):
    # An HTTPException, so FastAPI's body parsing lets it through to the error handlers
    # instead of turning it into "error parsing the body".
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"Request body is larger than {limit} bytes")


class BodyLimitMiddleware:
    """Refuse a declared Content-Length above the limit up front; cut off chunked bodies."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            exc = BodyTooLarge(self.limit)
            response = error_response(413, "payload_too_large", str(exc.detail))
            await response(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, counting_receive, send)
