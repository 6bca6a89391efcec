"""Probes: `/healthz` (the process answers) and `/readyz` (store and Temporal reachable)."""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import ReadinessDep
from app.openapi import errors
from app.schemas.health import Liveness, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Liveness:
    """Always 200 while the process serves requests."""
    return Liveness()


@router.get(
    "/readyz",
    responses=errors(503, s503="service_unavailable: the store or Temporal does not answer"),
)
async def readyz(probe: ReadinessDep) -> Readiness:
    """200 when the store and Temporal answer; 503 naming each part that does not.
    `checks.workers` says whether a worker polls the task queue (informative only)."""
    return await probe.check()
