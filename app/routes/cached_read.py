"""A read answered from the read cache while nothing it shows was written
(app/services/read_cache.py), kept with what the read lane (app/read_lane.py) needs to
answer it again before routing.

The answer is kept under the request's target (its path and query as sent): the lane
finds it without parsing a parameter, and only ever for a request the route has
validated and answered with a 200.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable

from fastapi import Request, Response
from starlette.types import Scope

from app.auth.guard import request_rule
from app.errors import Forbidden
from app.routes.conditional import counted_response
from app.services.read_cache import ReadCache, Shown


def target_of(scope: Scope) -> Hashable:
    """The key of a request's answer: its path and its query, as sent."""
    return (scope["path"], scope["query_string"])


async def cached_read(
    request: Request,
    cache: ReadCache,
    *,
    read: str,
    workflow_id: str,
    changes: Callable[[], Awaitable[int | None]],
    view: str,
    build: Callable[[], Awaitable[bytes]],
) -> Response:
    """The body `build` makes, or the one kept while `changes()` stands; tagged with the
    count (`view` says what of the counted thing it shows: app/routes/conditional.py).

    `build` is kept with the answer for the read lane: it may use what the path and query
    named, never the caller (the lane checks the caller before it calls it)."""
    rule = request_rule(request)
    if rule is None:  # cannot happen: every route declares one (check_routes)
        raise Forbidden("This route declares no permission")
    # Counted before reading: a write in between shows as a change next time.
    count = await changes()
    shown = Shown(read, workflow_id, rule, changes, view, request.scope.get("route"), build)
    body, built = await cache.answer(target_of(request.scope), count, build, shown)
    answers = request.app.state.metrics.read_answers
    answers.labels(read, "built" if built else "kept").inc()
    return counted_response(request, body, count, view)
