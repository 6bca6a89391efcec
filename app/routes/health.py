"""Probes: `/healthz` (the process answers) and `/readyz` (store and Temporal reachable)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from activities.store.base import Store
from app.deps import StoreDep, TemporalLinkDep
from app.errors import ServiceUnavailable
from app.schemas.health import Liveness, Readiness

router = APIRouter(tags=["health"])
STORE_PING_TIMEOUT_SECONDS = 2.0


@router.get("/healthz")
async def healthz() -> Liveness:
    """Always 200 while the process serves requests."""
    return Liveness()


@router.get("/readyz")
async def readyz(store: StoreDep, link: TemporalLinkDep) -> Readiness:
    """200 when the store and Temporal answer; 503 naming each part that does not."""
    store_problem, temporal_problem = await asyncio.gather(_store_problem(store), link.problem())
    failing = {k: v for k, v in (("store", store_problem), ("temporal", temporal_problem)) if v}
    if failing:
        raise ServiceUnavailable(
            "Not ready: " + "; ".join(f"{part}: {why}" for part, why in failing.items()),
            [{"path": part, "message": why} for part, why in failing.items()],
        )
    return Readiness(checks={"store": "ok", "temporal": "ok"})


async def _store_problem(store: Store) -> str | None:
    try:
        async with asyncio.timeout(STORE_PING_TIMEOUT_SECONDS):
            await store.ping()
    except TimeoutError:
        return f"no answer within {STORE_PING_TIMEOUT_SECONDS:g}s"
    except Exception as exc:  # any failure means "not ready", and says why
        return str(exc) or type(exc).__name__
    return None
