"""Readiness: the store answers a ping and Temporal's health check passes, each in time.

A 503 names the part that failed and how, never a driver's own message (the log has it).
The answer also says whether a worker polls the task queue. That does not make the API
unready: it serves reads and takes runs without one (they wait), and a probe that failed
with the workers would take every API replica out of service with them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from activities.store.base import Store
from app.errors import ServiceUnavailable
from app.redaction import describe, scrub
from app.schemas.health import Readiness
from app.services.worker_presence import workers_check
from app.temporal_link import TemporalLink

log = logging.getLogger("trellis.readiness")
STORE_PING_TIMEOUT_SECONDS = 2.0


@dataclass
class ReadinessProbe:
    store: Store
    temporal: TemporalLink
    store_url: str = ""
    task_queue: str = "trellis"

    async def check(self) -> Readiness:
        """Ready, or ServiceUnavailable (503) naming each part that is not, and why."""
        store_problem, temporal_problem = await asyncio.gather(
            self._store_problem(), self.temporal.problem()
        )
        failing = {k: v for k, v in (("store", store_problem), ("temporal", temporal_problem)) if v}
        if failing:
            raise ServiceUnavailable(
                "Not ready: " + "; ".join(f"{part}: {why}" for part, why in failing.items()),
                [{"path": part, "message": why} for part, why in failing.items()],
            )
        workers = await workers_check(await self.temporal.require(), self.task_queue)
        return Readiness(checks={"store": "ok", "temporal": "ok", "workers": workers})

    async def _store_problem(self) -> str | None:
        try:
            async with asyncio.timeout(STORE_PING_TIMEOUT_SECONDS):
                await self.store.ping()
        except TimeoutError:
            return f"no answer within {STORE_PING_TIMEOUT_SECONDS:g}s"
        except Exception as exc:  # any failure means "not ready"
            # A driver's message may name hosts or quote a URL: it goes to the log only.
            log.warning("store not ready: %s", scrub(describe(exc), self.store_url))
            return "not reachable (the API's log says why)"
        return None
