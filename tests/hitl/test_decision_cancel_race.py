"""A decision and a cancel (or a resume and a cancel) sent at the same moment: the run
ends one way, and the store and Temporal say the same."""

from __future__ import annotations

import asyncio

from temporalio.client import WorkflowExecutionStatus

from tests.builders import echo
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.platform import Platform
from tests.support.polling import eventually

GATED = [echo("gated", {"requiresConfirmation": True}), echo("after")]
# Temporal's end of a run, by the status the store shows for it.
TEMPORAL_END = {
    "completed": {WorkflowExecutionStatus.COMPLETED},
    "cancelled": {WorkflowExecutionStatus.CANCELED},
    "failed": {WorkflowExecutionStatus.FAILED},
}


async def settled(platform: Platform, wf: str, run_id: str) -> dict[str, object]:
    """The run once Temporal closed it and the store shows an end (or the test fails)."""
    handle = platform.client.get_workflow_handle(run_id)

    async def closed() -> WorkflowExecutionStatus | None:
        status = (await handle.describe()).status
        return None if status == WorkflowExecutionStatus.RUNNING else status

    temporal = await eventually(closed, within=15)
    run = await platform.wait(wf, run_id, within=15)
    assert temporal in TEMPORAL_END[run["status"]], (temporal, run["status"], run)
    return run


async def test_a_decision_and_a_cancel_at_once_end_the_run_one_way_in_both(
    platform: Platform,
) -> None:
    for _ in range(6):
        wf, run_id = await start(platform, GATED)
        await wait_for_gate(platform, wf, run_id, "gated")
        decided, cancelled = await asyncio.gather(
            approve(platform, wf, run_id, stepId="gated", resolution="confirm"),
            control(platform, wf, run_id, "cancel"),
        )
        assert decided.status_code in (200, 409), decided.text
        assert cancelled.status_code in (200, 409), cancelled.text
        run = await settled(platform, wf, run_id)
        assert run["pendingRequirements"] == []
        if decided.status_code == 200 and run["status"] == "completed":
            assert [n["status"] for n in run["nodeRuns"]] == ["completed", "completed"]


async def test_a_resume_and_a_cancel_at_once_end_the_run_one_way_in_both(
    platform: Platform,
) -> None:
    for _ in range(6):
        wf, run_id = await start(platform, GATED)
        await wait_for_gate(platform, wf, run_id, "gated")
        assert (await control(platform, wf, run_id, "pause")).status_code == 200
        assert (
            await approve(platform, wf, run_id, stepId="gated", resolution="confirm")
        ).status_code == 200
        resumed, cancelled = await asyncio.gather(
            control(platform, wf, run_id, "resume"), control(platform, wf, run_id, "cancel")
        )
        assert resumed.status_code in (200, 409), resumed.text
        assert cancelled.status_code in (200, 409), cancelled.text
        await settled(platform, wf, run_id)
