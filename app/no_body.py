"""A request that takes no body refuses one (400), rather than acting on it unread: a body
asking for something (a new `initialInput`, a reason) would be silently ignored, and
malformed JSON answered as if it were fine. No body, or `{}`, passes."""

from __future__ import annotations

import json
from collections.abc import Collection

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam

from app.errors import InvalidRequest


def no_body(what: str, why: str = "", nulls_of: Collection[str] = ()) -> DependsParam:
    """A dependency refusing a body: "A <what> takes no body: <why>". A JSON object
    whose fields are all among `nulls_of` and null passes too (a trigger's optional fields
    sent as null, which a trigger reads as left out)."""

    async def refusing(request: Request) -> None:
        body = (await request.body()).strip()
        try:
            sent = json.loads(body) if body else {}
        except ValueError:
            sent = None
        empty = isinstance(sent, dict) and all(
            value is None and name in nulls_of for name, value in sent.items()
        )
        if not empty:
            raise InvalidRequest(f"A {what} takes no body" + (f": {why}" if why else ""))

    checked: DependsParam = Depends(refusing)
    return checked
