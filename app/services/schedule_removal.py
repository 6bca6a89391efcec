"""Deleting a workflow's Temporal Schedules before its records are deleted.

Without this a paused schedule of a deleted workflow stayed in Temporal for ever, and an
active one fired once more (up to a year later) before deleting itself
(activities/scheduling.py keeps that as the safety net). A schedule's skip log goes with it,
once the workflow's records are gone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.scheduling import skip_log_key
from activities.store.base import Store
from app.errors import ServiceUnavailable
from app.services.schedules import schedules_query, trellis_trigger
from app.temporal_link import TemporalLink

log = logging.getLogger(__name__)


@dataclass
class ScheduleRemover:
    temporal: TemporalLink
    store: Store

    async def delete_schedules(self, workflow_id: str) -> list[str]:
        """Delete the workflow's schedules Temporal lists; their ids (for `delete_skips`).
        Only those Trellis made for it: one made in Temporal with the same search
        attribute is someone else's and is left alone."""
        try:
            client = await self.temporal.require()
        except ServiceUnavailable:
            # The delete needs no Temporal otherwise; each schedule deletes itself when it
            # next fires and finds no workflow.
            log.warning("schedules of %s left to delete themselves: Temporal is down", workflow_id)
            return []
        # Visibility lags: a schedule made a moment ago may not be listed yet (the safety
        # net above covers it).
        listed = await client.list_schedules(query=schedules_query(workflow_id))
        listed_ids = [s.id async for s in listed]
        deleted = await asyncio.gather(
            *(_delete_ours(client, workflow_id, schedule_id) for schedule_id in listed_ids)
        )
        return [schedule_id for schedule_id, ours in zip(listed_ids, deleted, strict=True) if ours]

    async def delete_skips(self, schedule_ids: list[str]) -> None:
        """Delete the skip logs of the given schedules: after the workflow's records, so a
        firing that read the workflow before writes its skip before this, or sees the
        workflow gone after writing it and deletes it itself (activities/scheduling.py)."""
        for schedule_id in schedule_ids:
            await self.store.delete_events(skip_log_key(schedule_id))


async def _delete_ours(client: Client, workflow_id: str, schedule_id: str) -> bool:
    """Delete the schedule if Trellis made it for the workflow; whether it was ours."""
    handle = client.get_schedule_handle(schedule_id)
    try:
        trigger = await trellis_trigger(client, await handle.describe())
        if trigger is None or trigger.workflow_id != workflow_id:
            return False
        await handle.delete()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:  # deleted meanwhile: done all the same
            raise
    return True
