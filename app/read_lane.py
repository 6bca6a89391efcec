"""The read lane: reads the read cache can answer, answered before routing.

A run detail or a page of runs the API has answered, asked for again (the same path and
query) while nothing it shows was written, is answered here from the read cache
(app/services/read_cache.py), without FastAPI's routing and dependency solving: those
were ~60 % of such a read's CPU (docs/benchmarks.md, fifteenth session).

The checks are the route's own, made afresh on every request: the caller is
authenticated as every route authenticates (app/auth/guard.py), must hold the route's
scope and its permission on the workflow (read from the store now: a revoked grant
counts at once), and the change count must still be the one the answer was kept at.
Whatever is in doubt — nothing kept, a check that fails, an error — goes the usual way,
which gives the documented answer (401, 403, 404, ...) and keeps the new one.

Built only when tracing is off: a traced request goes through routing, where its span is
named after its route.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.auth.acl import require
from app.auth.guard import bearer
from app.routes.cached_read import target_of
from app.routes.conditional import counted_response
from app.services.read_cache import Kept


class ReadLaneMiddleware:
    def __init__(self, app: ASGIApp, root: Any) -> None:
        self.app = app
        # The FastAPI app whose state holds the cache, the store and the authenticator.
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            kept = self.root.state.read_cache.kept(target_of(scope))
            if kept is not None and kept.shown is not None:
                request = Request(scope, receive)
                response = await self._checked(request, kept)
                if response is not None:
                    scope["route"] = kept.shown.route  # the request metrics' label
                    answers = self.root.state.metrics.read_answers
                    answers.labels(kept.shown.read, "kept_before_routing").inc()
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _checked(self, request: Request, kept: Kept) -> Response | None:
        """The kept answer when every check the route makes passes; None otherwise."""
        assert kept.shown is not None
        shown, state = kept.shown, self.root.state
        try:
            # The count first: while a run is being written it is the check that fails,
            # and it costs one indexed row (a poller's miss then pays little here).
            count = await shown.changes()
            if count != kept.count:
                return None
            caller = await state.authenticator.caller(await bearer(request))
            if not caller.has_scope(shown.rule.scope):
                return None
            access = await state.store.get_workflow_access(shown.workflow_id)
            if access is None:
                return None
            require(caller, access, shown.rule.permission)
        except Exception:  # the usual way answers it as documented (or fails as it would)
            return None
        return counted_response(request, kept.body, count, shown.view)
