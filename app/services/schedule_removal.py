"""Deleting a workflow's Temporal Schedules before its records are deleted, and those its
creates noted after that (app/services/schedule_notes.py).

Without this a paused schedule of a deleted workflow stayed in Temporal for ever, and an
active one fired once more (up to a year later) before deleting itself
(activities/scheduling.py keeps that as the safety net). A schedule's skip log goes with it,
once the workflow's records are gone, and its own large payload (its argument) goes to the
firings' sweep (app/firing_payloads.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.scheduling import forget_schedule
from activities.store.base import Store
from app.errors import ServiceUnavailable
from app.services.schedule_notes import forget_notes, noted
from app.services.schedules import schedules_query, trellis_trigger
from app.temporal_link import TemporalLink
from app.temporal_outage import unreachable

log = logging.getLogger(__name__)
# Each call to Temporal while schedules are removed: a hung Temporal is taken as a down one.
REMOVAL_RPC_TIMEOUT = timedelta(seconds=5)


@dataclass
class ScheduleRemover:
    temporal: TemporalLink
    store: Store

    async def delete_schedules(self, workflow_id: str) -> list[str] | None:
        """Delete the workflow's schedules Temporal lists; their ids (for
        `delete_schedule_records`), None when Temporal did not answer. Only those Trellis
        made for it: one made in Temporal with the same search attribute is someone else's
        and is left alone."""
        try:
            client = await self.temporal.require()
        except ServiceUnavailable:
            _left(workflow_id, "Temporal is down")
            return None
        # The delete needs no Temporal otherwise (no open runs): a Temporal that hangs
        # instead of refusing held it 30 s and answered 503, the workflow kept.
        try:
            # Visibility lags: a schedule made a moment ago may not be listed yet (its
            # create's note finds it, after the records: `delete_schedule_records`).
            listed = await client.list_schedules(
                query=schedules_query(workflow_id), rpc_timeout=REMOVAL_RPC_TIMEOUT
            )
            listed_ids = [s.id async for s in listed]
        except RPCError as exc:
            if not unreachable(exc):
                raise
            _left(workflow_id, f"Temporal did not answer ({exc.message})")
            return None
        return await _delete_each(client, workflow_id, listed_ids)

    async def delete_schedule_records(
        self, workflow_id: str, schedule_ids: list[str] | None
    ) -> None:
        """After the workflow's records: delete the schedules its creates noted (made as
        the list was read, or not listed yet), unless Temporal did not answer the list
        (`schedule_ids` None: they delete themselves); then delete the skip logs and fire-now
        requests of those deleted, and hand their own payloads to the firings' sweep, so a
        firing that read the workflow before writes its skip before this, or sees the
        workflow gone after writing it and deletes it itself (activities/scheduling.py)."""
        if schedule_ids is not None:
            try:
                client = await self.temporal.require()
            except ServiceUnavailable:
                _left(workflow_id, "Temporal is down")
            else:
                # Every one noted, listed before too: a keyed create's repeat may have made
                # its schedule again under the same id since.
                noted_ids = await noted(self.store, workflow_id)
                deleted = await _delete_each(client, workflow_id, noted_ids)
                schedule_ids = list(dict.fromkeys(schedule_ids + deleted))
        for schedule_id in schedule_ids or []:
            await forget_schedule(self.store, schedule_id)
        await forget_notes(self.store, workflow_id)


async def _delete_each(client: Client, workflow_id: str, schedule_ids: list[str]) -> list[str]:
    """Delete those of the schedules Trellis made for the workflow; their ids (the rest,
    Temporal not answering, delete themselves)."""
    deleted = await asyncio.gather(
        *(_delete_ours(client, workflow_id, schedule_id) for schedule_id in schedule_ids),
        return_exceptions=True,
    )
    for outcome in deleted:
        if isinstance(outcome, BaseException):
            if not (isinstance(outcome, RPCError) and unreachable(outcome)):
                raise outcome
            _left(workflow_id, f"Temporal did not answer ({outcome.message})")
    return [
        schedule_id for schedule_id, ours in zip(schedule_ids, deleted, strict=True) if ours is True
    ]


def _left(workflow_id: str, why: str) -> None:
    """Not deleted: each schedule deletes itself when it next fires and finds no workflow."""
    log.warning("schedules of %s left to delete themselves: %s", workflow_id, why)


async def _delete_ours(client: Client, workflow_id: str, schedule_id: str) -> bool:
    """Delete the schedule if Trellis made it for the workflow; whether it was ours."""
    handle = client.get_schedule_handle(schedule_id)
    try:
        described = await handle.describe(rpc_timeout=REMOVAL_RPC_TIMEOUT)
        trigger = await trellis_trigger(client, described)
        if trigger is None or trigger.workflow_id != workflow_id:
            return False
        await handle.delete(rpc_timeout=REMOVAL_RPC_TIMEOUT)
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:  # deleted meanwhile: done all the same
            raise
    return True
