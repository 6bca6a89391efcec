"""The read lane: reads the read cache can answer, answered before routing.

A run detail or a page of runs the API has answered, asked for again (the same path and
query), is answered here without FastAPI's routing and dependency solving: those were
~60 % of a kept read's CPU, and ~1.2 ms of a 2.4 ms fresh one (docs/benchmarks.md,
fifteenth and sixteenth sessions). While nothing it shows was written, the answer is the
one kept in the read cache (app/services/read_cache.py); once something was, it is built
afresh by the route's own build, kept with the answer, and kept again: a client polling
a running run is answered here too.

The checks are the route's own, made afresh on every request and before anything is
built: the caller is authenticated as every route authenticates (app/auth/guard.py),
must hold the route's scope and its permission on the workflow (read from the store
now: a revoked grant counts at once). Whatever is in doubt — nothing kept, a check that
fails, an error (a run gone since: its build raises) — goes the usual way, which gives
the documented answer (401, 403, 404, ...) and keeps the new one.

Built only when tracing is off: a traced request goes through routing, where its span is
named after its route.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from fastapi import Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.auth.acl import require
from app.auth.guard import bearer
from app.routes.cached_read import target_of
from app.routes.conditional import counted_response
from app.services.read_cache import Shown


class ReadLaneMiddleware:
    def __init__(self, app: ASGIApp, root: Any) -> None:
        self.app = app
        # The FastAPI app whose state holds the cache, the store and the authenticator.
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            key = target_of(scope)
            kept = self.root.state.read_cache.kept(key)
            if kept is not None and kept.shown is not None:
                request = Request(scope, receive)
                answered = await self._checked(request, key, kept.shown)
                if answered is not None:
                    response, built = answered
                    scope["route"] = kept.shown.route  # the request metrics' label
                    answers = self.root.state.metrics.read_answers
                    how = "built_before_routing" if built else "kept_before_routing"
                    answers.labels(kept.shown.read, how).inc()
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _checked(
        self, request: Request, key: Hashable, shown: Shown
    ) -> tuple[Response, bool] | None:
        """The answer, and whether it was built now, when every check the route makes
        passes; None otherwise."""
        state = self.root.state
        try:
            # Counted before anything is read, as the route counts (app/routes/cached_read.py).
            count = await shown.changes()
            caller = await state.authenticator.caller(await bearer(request))
            if not all(caller.has_scope(s) for s in shown.rule.scopes):
                return None
            access = await state.store.get_workflow_access(shown.workflow_id)
            if access is None:
                return None
            require(caller, access, shown.rule.permission)
            body, built = await state.read_cache.answer(key, count, shown.build, shown)
        except Exception:  # the usual way answers it as documented (or fails as it would)
            return None
        return counted_response(request, body, count, shown.view), built
