"""Runs Temporal closed behind the workflow's back are corrected in the read model."""

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from activities.store.records import RunRecord
from app.reconciler import Reconciler
from tests.support.platform import Platform
from tests.support.polling import eventually

LONG = {
    "nodes": [
        {
            "name": "long",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"seconds": 60},
        }
    ]
}


async def test_a_run_terminated_in_temporal_is_corrected_within_seconds(
    platform: Platform,
) -> None:
    reconciler = Reconciler(platform.client, platform.store, interval=0.2)
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        wf = await platform.create(LONG)
        run_id = await platform.trigger(wf)
        run = await platform.wait(wf, run_id, {"running"})
        while not run["nodeRuns"]:  # the step is under way
            await asyncio.sleep(0.05)
            run = await platform.wait(wf, run_id, {"running"})
        await platform.client.get_workflow_handle(run_id).terminate(reason="operator in Web UI")
        run = await platform.wait(wf, run_id, within=10)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert run["status"] == "cancelled"
    assert run["errorSummary"] == "Terminated in Temporal: operator in Web UI"
    assert run["finishedAt"] is not None

    # The step's activity learns of the termination from its next heartbeat and records
    # its own end; no node run stays running.
    async def no_node_run_running() -> dict[str, Any] | None:
        run = await platform.wait(wf, run_id)
        statuses = [n["status"] for n in run["nodeRuns"]]
        return run if statuses and "running" not in statuses else None

    run = await eventually(no_node_run_running, within=5)
    assert [n["status"] for n in run["nodeRuns"]] == ["cancelled"]


async def test_a_correct_run_is_left_alone(platform: Platform) -> None:
    wf = await platform.create(
        {"nodes": [{"name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}
    )
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id)
    corrected = await Reconciler(platform.client, platform.store).reconcile_once()
    assert run_id not in corrected
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed" and run["errorSummary"] is None


async def test_a_run_whose_workflow_never_started_is_failed(platform: Platform) -> None:
    wf = await platform.create(LONG)
    record = await platform.store.get_workflow(wf)
    assert record is not None
    orphan = RunRecord(
        id="run-orphan-1",
        workflow_definition_id=wf,
        workflow_version=1,
        definition_snapshot=record.spec(),
    )
    await platform.store.insert_run(orphan)
    reconciler = Reconciler(
        platform.client, platform.store, never_started_after=timedelta(seconds=0)
    )
    assert "run-orphan-1" in await reconciler.reconcile_once()
    run = await platform.wait(wf, "run-orphan-1")
    assert run["status"] == "failed"
    assert run["errorSummary"] == "The run's workflow was never started in Temporal"
