"""A reconciler for tests: it starts a never-started run at once, not after 30 s."""

from __future__ import annotations

from datetime import timedelta

from app.reconciler import Reconciler
from tests.support.platform import Platform


def eager(platform: Platform) -> Reconciler:
    return Reconciler(
        platform.client,
        platform.store,
        task_queue=platform.task_queue,
        never_started_after=timedelta(seconds=0),
    )
