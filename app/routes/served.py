"""Every route the API serves, built once per process.

FastAPI (0.165) builds an included router's routes again for each app that includes it:
every dependant's signature and every response model's adapter, ~150 ms an app. The
routes below were built when their modules were imported (each router carries its whole
path prefix), and every app is handed these same objects. A route keeps nothing of an app:
its dependencies read the request's app (`request.app.state`). One thing is given up:
FastAPI's `app.dependency_overrides` does not reach routes built outside an app (nothing
here uses it; tests build real apps).
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from app.routes import (
    approvals,
    catalog,
    controls,
    events,
    graph,
    health,
    lineage,
    metrics,
    permissions,
    run_lookup,
    runs,
    schedules,
    versions,
    workflows,
)

ROUTES: tuple[BaseRoute, ...] = tuple(
    route
    for module in (
        health,
        metrics,
        workflows,
        versions,
        catalog,
        runs,
        run_lookup,
        controls,
        approvals,
        lineage,
        events,
        graph,
        schedules,
        permissions,
    )
    for route in module.router.routes
)
