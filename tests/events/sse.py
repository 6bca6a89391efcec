"""A small Server-Sent Events reader over an httpx stream (what a browser's EventSource does)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Message:
    id: str | None = None
    event: str | None = None
    data: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads("\n".join(self.data))


async def messages(response: httpx.Response) -> AsyncIterator[Message]:
    """Every message and comment block of the stream, until the server closes it."""
    current = Message()
    async for line in response.aiter_lines():
        if line == "":
            if current.data or current.comments or current.id:
                yield current
            current = Message()
        elif line.startswith(":"):
            current.comments.append(line[1:].strip())
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                current.id = value
            elif name == "event":
                current.event = value
            elif name == "data":
                current.data.append(value)
    if current.data or current.comments:
        yield current


async def read_all(
    api: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None
) -> list[Message]:
    """Read a whole stream (it must end by itself); comments are kept as messages too."""
    async with api.stream("GET", url, headers=headers or {}, timeout=30) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [m async for m in messages(response)]
