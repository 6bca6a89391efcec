"""`HEAD` on every path served by `GET`: the GET's status and headers, without its body
(RFC 9110 9.3.2).

The request runs as the GET it stands for, through the same authentication, scope and
ACL checks, so a HEAD can do nothing its GET would not. A path without a GET route is
left alone (405, with `Allow`).
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.openapi import allowed_methods


class HeadMiddleware:
    """Answers `HEAD` as `GET` and drops the body."""

    def __init__(self, app: ASGIApp, root: Any) -> None:
        self.app = app
        # The FastAPI app whose routes say which paths serve GET.
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "HEAD"
            or "GET" not in allowed_methods(self.root, scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        # A copy: the server keeps its own scope, and knows from it to send no body.
        as_get = {**scope, "method": "GET"}
        finished = False

        async def head_send(message: Message) -> None:
            nonlocal finished
            if finished:
                return
            if message["type"] == "http.response.body":
                # The headers (Content-Length included) are the GET's; the body is not sent.
                finished = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        async def head_receive() -> Message:
            # Once the answer is complete a stream (the run's events) has nothing to send:
            # it is told the client left, so it ends instead of running on unheard.
            if finished:
                return {"type": "http.disconnect"}
            return await receive()

        await self.app(as_get, head_receive, head_send)
