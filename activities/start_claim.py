"""Who decides a run whose workflow has not started: its start or a cancel, never both.

A run is recorded at `RECORDED_REV` before its workflow is started. Every starter claims the run
at `START_CLAIM_REV` just before it asks Temporal; a cancel of a run Temporal does not
know writes it cancelled at the same rev. Both write `newer_only`, so exactly one of
them applies: a run cancelled first is never started, and a run claimed first is
cancelled through Temporal.

Revs only rise, so a claim outlives a start that failed or a starter that died. Such a
run (pending at the claim's rev, no workflow) is cancelled for good at
`CANCELLED_UNSTARTED_REV`; a starter still in flight reads the record cancelled right
after its start and cancels the workflow it started (`cancel_if_cancelled`).
"""

from __future__ import annotations

from typing import Literal

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.store.base import Store
from activities.store.records import RunRecord, utcnow
from temporal_workflows.read_model import (
    CANCELLED_UNSTARTED_REV,
    START_CLAIM_REV,
    TERMINAL_RUN_STATUSES,
    run_event,
)

# cancelled: this call ended the run before any start; overwritten: it ended a run a
# start had claimed (cancel the workflow too, should one exist); started: the workflow
# wrote, or a start claimed it first (cancel it through Temporal); ended: it was over.
BeforeStart = Literal["cancelled", "overwritten", "started", "ended"]


async def claim_start(store: Store, run: RunRecord) -> RunRecord:
    """Claim a pending run for a start; returns the record (pending: start it)."""
    if await store.update_run(run.id, START_CLAIM_REV, {"status": "pending"}, newer_only=True):
        return run.model_copy(update={"rev": START_CLAIM_REV})  # nothing else changed
    # Claimed by another start (still pending: starting again is harmless), cancelled,
    # or written by its workflow.
    return await store.get_run(run.id) or run


# `cancel_requested` is logged once per run under this key: the API logs it before it asks
# Temporal, and a cancel of a run that never started logs it again with the run's end.
CANCEL_REQUESTED_KEY = "cancel_requested"


async def cancel_before_start(store: Store, run_id: str, requested_by: str) -> BeforeStart:
    """End a run whose workflow Temporal does not know as cancelled, unless a start won."""
    stamp = utcnow().isoformat().replace("+00:00", "Z")
    changes = {"status": "cancelled", "finished_at": stamp, "pending_requirements": []}
    requested = run_event(
        "cancel_requested",
        run_id=run_id,
        status="pending",
        timestamp=stamp,
        requestedBy=requested_by,
    )
    run = await store.get_run(run_id)
    if run is None or run.status in TERMINAL_RUN_STATUSES:
        return "ended"
    if run.status != "pending":
        return "started"
    # Unclaimed: race the starters for the claim's rev. Claimed: a start failed or its
    # starter died, or it is in flight (the caller then cancels its workflow).
    unclaimed = run.rev < START_CLAIM_REV
    rev = START_CLAIM_REV if unclaimed else CANCELLED_UNSTARTED_REV
    if not await store.update_run(
        run_id, rev, changes, requested, newer_only=unclaimed, event_key=CANCEL_REQUESTED_KEY
    ):
        return "started"
    await store.append_event(
        run_id, run_event("run_cancelled", run_id=run_id, status="cancelled", timestamp=stamp)
    )
    return "cancelled" if unclaimed else "overwritten"


async def cancel_if_cancelled(store: Store, client: Client, run_id: str) -> None:
    """After a start: cancel the workflow when its run was cancelled while it started, or
    deleted with its workflow (a trigger racing the workflow's delete started a run that
    nothing in Trellis could show or stop, running on in Temporal)."""
    run = await store.get_run(run_id)
    if run is not None and run.status != "cancelled":
        if await store.get_workflow_access(run.workflow_definition_id) is not None:
            return
    try:
        await client.get_workflow_handle(run_id).cancel(reason="run cancelled before it started")
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
