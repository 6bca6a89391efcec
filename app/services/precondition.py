"""Conditional writes: a strong ETag from what a GET shows, and 412 for a stale If-Match.

A read-change-write client (the CLI's `schedules update`, `workflows share`) sends back the
tag of its read; a change made in between changes the tag, and its write is refused rather
than overwriting that change (docs/api.md, Conditional writes).
"""

from __future__ import annotations

import hashlib
from typing import TypeGuard, TypeVar

from fastapi import Response
from pydantic import BaseModel

from app.errors import PreconditionFailed
from app.header_text import as_sent

M = TypeVar("M", bound=BaseModel)


def content_tag(model: BaseModel, exclude: set[str] | None = None) -> str:
    """A strong ETag of `model` as the API shows it (without `exclude`): equal bodies,
    equal tags, on any replica and release."""
    shown = model.model_dump_json(by_alias=True, exclude=exclude)
    return '"' + hashlib.sha256(shown.encode()).hexdigest()[:32] + '"'


def tagged(response: Response, model: M) -> M:
    """`model`, its answer carrying its strong `ETag` (`content_tag`)."""
    response.headers["ETag"] = content_tag(model)
    return model


def require_match(header: str | None, tag: str, what: str) -> None:
    """412 unless an If-Match header is absent, `*`, or names `tag` (RFC 9110's strong
    comparison: a weak tag never matches; a malformed one names no tag, so 412 too)."""
    if header is None:
        return
    given = [t.strip() for t in header.split(",")]
    if "*" in given or tag in given:
        return
    raise stale(header, what)


def holds_to_a_tag(header: str | None) -> TypeGuard[str]:
    """Whether a write under this If-Match must find the resource as it was read (not
    absent, not `*`): then the check and the write are to be one step."""
    return header is not None and "*" not in (t.strip() for t in header.split(","))


def stale(header: str, what: str) -> PreconditionFailed:
    """The 412 for a write whose If-Match names no current tag."""
    return PreconditionFailed(
        f"{what} changed since it was read (If-Match {as_sent(header)[:100]!r} is not its current "
        "ETag): read it again and make the change on what it is now"
    )
