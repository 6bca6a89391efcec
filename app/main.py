"""The FastAPI application: parts built (or injected), routers, error mapping, body limit."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from temporalio.client import Client

from activities.executors.catalog import Catalog
from activities.store.base import Store
from activities.store.factory import open_store
from app.api_docs import install_docs
from app.api_metrics import ApiMetrics
from app.arrival import ArrivalMiddleware
from app.auth.guard import Authenticator, caller_before_body, check_routes
from app.body_limit import BodyLimitMiddleware
from app.console.routes import console_app
from app.deps import get_store, get_temporal
from app.errors import install_error_handlers
from app.head import HeadMiddleware
from app.heap import freeze_startup_heap
from app.loopback_host import LoopbackHostMiddleware
from app.openapi import API_PREFIX, install_openapi
from app.outbound import executor_catalog
from app.read_lane import ReadLaneMiddleware
from app.request_metrics import RequestMetricsMiddleware
from app.routes.served import ROUTES
from app.services.event_hub import EventHub
from app.services.read_cache import ReadCache
from app.settings import Settings
from app.shutdown_answer import ShutdownAnswerMiddleware
from app.temporal_link import TemporalLink
from app.tracing import fastapi_telemetry, temporal_interceptors

log = logging.getLogger(__name__)


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    temporal: Client | None = None,
    catalog: Catalog | None = None,
    api_metrics: ApiMetrics | None = None,
    tracer_provider: TracerProvider | None = None,
    own_process: bool = False,
) -> FastAPI:
    """The API. Parts passed in are used as is (and not closed); missing ones are built.

    `own_process`: the API is the process (`trellis api`), so once started it freezes the
    heap it started with (app/heap.py); not for an app inside another program or a test.

    With a tracer provider (app/tracing.py), requests and the Temporal calls they make
    are traced (a client passed in brings its own interceptors).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            app.state.store = store or await _open_store(settings, stack)
            app.state.catalog = catalog or await _open_catalog(settings, stack)
            link = TemporalLink(
                settings, temporal, app.state.store, temporal_interceptors(tracer_provider)
            )
            app.state.temporal_link = link
            if temporal is None:
                # Dial once now; when Temporal is down the API still starts and serves
                # reads, and the first request that needs Temporal dials again.
                try:
                    await link.require()
                except Exception as exc:
                    log.warning("Temporal not reachable at start-up: %s", exc)
            app.state.temporal = link.client
            app.state.event_hub = EventHub(app.state.store)
            stack.push_async_callback(app.state.event_hub.close)
            if own_process:
                freeze_startup_heap()
            yield

    app = FastAPI(
        title="Trellis",
        summary="Durable workflows on Temporal: definitions, runs, approvals.",
        version="0.1.0",
        lifespan=lifespan,
        # An unknown path is the documented 404: Starlette's redirect between a path with
        # and without a trailing slash answered 307 before authentication, echoing the
        # request's `Host` into `Location`. The console's one redirect is its own route.
        redirect_slashes=False,
        # /docs is ours (app/api_docs.py): FastAPI's loads Swagger UI from a CDN. No /redoc.
        docs_url=None,
        redoc_url=None,
        telemetry=fastapi_telemetry(tracer_provider),
        # Built once per process (app/routes/served.py), not again for each app.
        routes=list(ROUTES),
    )
    app.state.settings = settings
    app.state.read_cache = ReadCache(settings.read_cache_bytes)
    app.state.authenticator = Authenticator.from_settings(settings)
    install_openapi(
        app,
        needs_temporal=get_temporal,
        needs_store=get_store,
        token_optional=settings.auth_mode == "dev",
    )
    app.state.metrics = api_metrics or ApiMetrics()
    install_error_handlers(app, caller_first=caller_before_body)
    if tracer_provider is None:
        # Innermost of ours: a request it answers is still counted, limited, and let finish.
        app.add_middleware(ReadLaneMiddleware, root=app)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.resolved_max_body_bytes)
    app.add_middleware(ShutdownAnswerMiddleware)
    app.add_middleware(HeadMiddleware, root=app)
    if settings.auth_mode == "dev":
        app.add_middleware(LoopbackHostMiddleware)
    # Outermost of ours: a request's duration includes every middleware's work.
    app.add_middleware(RequestMetricsMiddleware, histogram=app.state.metrics.requests, root=app)
    # Outermost of all: a decision is for the gate open when its request arrived.
    app.add_middleware(ArrivalMiddleware)
    check_routes(app)
    install_docs(app)
    # The console: static files beside the API (not API routes; see app/console/routes.py).
    app.add_route("/console", _to_console, include_in_schema=False)
    app.mount("/console", console_app(settings, API_PREFIX), name="console")
    return app


async def _to_console(request: Request) -> Response:
    """The console's pages are under `/console/` (a path, not the request's `Host`)."""
    return RedirectResponse("/console/")


async def _open_store(settings: Settings, stack: AsyncExitStack) -> Store:
    store = open_store(settings.resolved_store_url)
    await store.connect()
    stack.push_async_callback(store.close)
    return store


async def _open_catalog(settings: Settings, stack: AsyncExitStack) -> Catalog:
    catalog = executor_catalog(settings)
    await catalog.start()
    stack.push_async_callback(catalog.close)
    return catalog
