"""ASGI middleware that keeps what every HTTP request to a peer carried: its path, headers
and, for a JSON-RPC body, the method. Tests read it to see what Trellis sent."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class SeenRequest:
    path: str
    headers: dict[str, str]
    rpc_method: str | None = None
    # A JSON-RPC request's params, as sent.
    rpc_params: dict[str, Any] | None = None


class RequestLog:
    def __init__(self, app: Any) -> None:
        self.app = app
        self._seen: list[SeenRequest] = []
        self._lock = threading.Lock()

    def seen(self, rpc_method: str | None = None, path_prefix: str = "") -> list[SeenRequest]:
        """Requests so far (oldest first), optionally of one JSON-RPC method or path."""
        with self._lock:
            return [
                r
                for r in self._seen
                if (rpc_method is None or r.rpc_method == rpc_method)
                and r.path.startswith(path_prefix)
            ]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        entry = SeenRequest(scope["path"], headers)
        with self._lock:
            self._seen.append(entry)
        chunks: list[bytes] = []

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    entry.rpc_method, entry.rpc_params = _rpc_call(b"".join(chunks))
            return message

        await self.app(scope, recording_receive, send)


def _rpc_call(body: bytes) -> tuple[str | None, dict[str, Any] | None]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(parsed, dict):
        return None, None
    method, params = parsed.get("method"), parsed.get("params")
    return (
        method if isinstance(method, str) else None,
        params if isinstance(params, dict) else None,
    )
