"""The worker's sweep of abandoned A2A tasks (activities/a2a_task_sweep.py): at the worker's
start, then every TRELLIS_A2A_TASK_SWEEP_SECONDS; a sweep that fails is logged, and the
next one tries again."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from activities.a2a_task_sweep import AbandonedA2ATasks
from activities.store.base import StoreUnavailable

log = logging.getLogger("trellis.a2a_tasks")


async def sweep_forever(sweep: AbandonedA2ATasks, every: timedelta) -> None:
    while True:
        try:
            await sweep.sweep()
        except asyncio.CancelledError:
            raise
        except StoreUnavailable as exc:  # said by the reconciler and the steps too
            log.info("the abandoned A2A tasks' sweep waits for the store: %s", exc)
        except Exception:
            log.exception("the abandoned A2A tasks' sweep failed")
        await asyncio.sleep(every.total_seconds())
