"""`GET /metrics`: the API's metrics in Prometheus's text format (or OpenMetrics, if asked).

Open like the probes, whatever the auth mode: scrapers cannot present a user's bearer
token, and the body holds counts and durations by workflow id, route template and status,
never a run id, a name, data or an identity (docs/operations.md, Metrics). Not part of
the API's OpenAPI document.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api_metrics import ApiMetrics
from app.deps import StoreDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, store: StoreDep) -> Response:
    """This API's metrics (every API process's, with several on one port)."""
    api_metrics: ApiMetrics = request.app.state.metrics
    body, content_type = await api_metrics.scrape(store, request.headers.get("accept"))
    return Response(body, media_type=content_type)
