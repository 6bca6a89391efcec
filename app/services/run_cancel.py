"""Cancelling a workflow's open runs through Temporal, before its records are deleted."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.start_claim import cancel_before_start
from activities.store.base import Store
from activities.store.open_runs import open_runs
from app.temporal_link import TemporalLink

log = logging.getLogger(__name__)
# Who the cancel of a run not yet started names in its event: the workflow's delete.
DELETED_BY = "workflow deleted"


@dataclass
class RunCanceller:
    store: Store
    temporal: TemporalLink
    # How long to wait for cancelled runs to record their end; a step that ignores
    # cancellation must not hold the delete forever.
    wait_seconds: float = 10.0

    async def cancel_open_runs(self, workflow_id: str) -> list[str]:
        """Cancel every open run of the workflow and wait (bounded) for them to close."""
        runs = await open_runs(self.store, workflow_id)
        if not runs:
            return []  # nothing to cancel: deleting needs no Temporal
        client = await self.temporal.require()
        # A run not started yet is ended before its start (or its starter, which finds it
        # cancelled or deleted, cancels what it started): Temporal knew nothing to cancel,
        # and its start then ran on with no record.
        for run in runs:
            if run.status == "pending":
                await cancel_before_start(self.store, run.id, DELETED_BY)
        await asyncio.gather(*(_cancel(client, run.id) for run in runs))
        try:
            await asyncio.wait_for(
                asyncio.gather(*(_closed(client, run.id) for run in runs)), self.wait_seconds
            )
        except TimeoutError:
            log.warning("runs of %s still closing after %ss", workflow_id, self.wait_seconds)
        return [run.id for run in runs]


async def _cancel(client: Client, run_id: str) -> None:
    try:
        await client.get_workflow_handle(run_id).cancel()
    except RPCError as exc:
        # Already closed, or never started: nothing left to cancel.
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise


async def _closed(client: Client, run_id: str) -> None:
    try:
        await client.get_workflow_handle(run_id).result()
    except Exception:
        return  # cancelled (the expected end), failed, or gone: closed either way
