"""Conditional reads: an ETag from the store's change count, and 304 when nothing changed.

A run detail or a page of runs carries `ETag: "<release>-<count>-<view>"` where the store
keeps change counts (SQLite; `Store.run_changes`). A client that sends it back in
`If-None-Match` gets `304 Not Modified` and no body while nothing it shows was written:
a poller (or a browser's cache, for the console) pays for a body only when there is news.
The release is part of the tag, so a new version's response shapes are never taken for
an old one's. Answered only once the read would be a 200: access, the run's workflow and
its existence are checked first.

Conditional writes: a schedule and a workflow's permissions carry a strong `ETag` made from
what their GET shows; a PUT with `If-Match` naming another tag is refused with 412
(app/services/precondition.py) so a read-change-write client never overwrites a change made in
between. Without `If-Match` a PUT is unconditional, as before.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Any

from fastapi import Header, Request, Response

RELEASE = version("trellis")
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not Modified: the `If-None-Match` tag is current"}
}


IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description="The ETag of the GET this change is based on: 412 if it changed since",
    ),
]


def counted_response(request: Request, body: bytes, count: int | None, view: str) -> Response:
    """`body` as JSON, tagged with `count` (and `view`, what of the counted thing it shows)
    when there is a count; 304 when the client already has that."""
    if count is None:
        return Response(body, media_type="application/json")
    tag = f'"{RELEASE}-{count}-{view}"'
    # no-cache: a cache may keep the body but must ask again (with the tag) every time.
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if tag_matches(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def tag_matches(header: str | None, tag: str) -> bool:
    """Whether an If-None-Match header names `tag`: RFC 9110's weak comparison of its list
    (or `*`). The console's assets answer 304 by it too."""
    if not header:
        return False
    given = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in given or tag in given
