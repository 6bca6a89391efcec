"""Runs Temporal closed behind the workflow's back are corrected; never-started runs start."""

import asyncio
import contextlib
from typing import Any

from activities.run_start import new_run_record
from activities.store.records import RunRecord
from app.reconciler import Reconciler
from tests.store.builders import at, node_run
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.reconciling import eager

ECHO = {"nodes": [{"name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}
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


async def a_step_under_way(platform: Platform) -> tuple[str, str]:
    """A run of the LONG step, once its step runs: (workflow id, run id)."""
    wf = await platform.create(LONG)
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id, {"running"})
    while not run["nodeRuns"]:
        await asyncio.sleep(0.05)
        run = await platform.wait(wf, run_id, {"running"})
    return wf, run_id


async def test_a_run_terminated_in_temporal_reads_failed_with_the_reason_within_seconds(
    platform: Platform,
) -> None:
    reconciler = Reconciler(
        platform.client, platform.store, task_queue=platform.task_queue, interval=0.2
    )
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        wf, run_id = await a_step_under_way(platform)
        await platform.client.get_workflow_handle(run_id).terminate(reason="operator in Web UI")
        run = await platform.wait(wf, run_id, within=10)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert run["status"] == "failed"
    assert run["errorSummary"] == "Terminated in Temporal: operator in Web UI"
    assert run["finishedAt"] is not None

    # The step's activity learns of the termination from its next heartbeat and records
    # its own end (cancelled), unless the reconciler closed it first (failed); no node run
    # stays running.
    async def no_node_run_running() -> dict[str, Any] | None:
        run = await platform.wait(wf, run_id)
        statuses = [n["status"] for n in run["nodeRuns"]]
        return run if statuses and "running" not in statuses else None

    run = await eventually(no_node_run_running, within=5)
    assert [n["status"] for n in run["nodeRuns"]] in (["cancelled"], ["failed"])


async def test_a_correct_run_is_left_alone(platform: Platform) -> None:
    wf = await platform.create(
        {"nodes": [{"name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}
    )
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id)
    reconciler = Reconciler(platform.client, platform.store, task_queue=platform.task_queue)
    corrected = await reconciler.reconcile_once()
    assert run_id not in corrected
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed" and run["errorSummary"] is None


async def orphan_of(platform: Platform, definition: dict[str, Any]) -> tuple[str, RunRecord]:
    """A run recorded as the API records one, whose workflow was never started."""
    wf = await platform.create(definition)
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    record = new_run_record(workflow, "manual", {"who": "orphan"})
    await platform.store.insert_run(record)
    return wf, record


async def test_a_run_whose_workflow_never_started_is_started_and_completes(
    platform: Platform,
) -> None:
    wf, orphan = await orphan_of(platform, ECHO)

    assert orphan.id in await eager(platform).reconcile_once()

    run = await platform.wait(wf, orphan.id)
    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["outputSnapshot"]["input"] == {"who": "orphan"}


async def test_a_young_never_started_run_is_left_to_its_starter(platform: Platform) -> None:
    _, orphan = await orphan_of(platform, ECHO)
    reconciler = Reconciler(platform.client, platform.store, task_queue=platform.task_queue)

    assert orphan.id not in await reconciler.reconcile_once()
    stored = await platform.store.get_run(orphan.id)
    assert stored is not None and stored.status == "pending"


async def test_a_never_started_run_of_a_disabled_workflow_is_failed_saying_why(
    platform: Platform,
) -> None:
    wf, orphan = await orphan_of(platform, ECHO)
    toggled = await platform.api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": False})
    assert toggled.status_code == 200

    assert orphan.id in await eager(platform).reconcile_once()

    run = await platform.wait(wf, orphan.id)
    assert run["status"] == "failed"
    assert run["errorSummary"] == (
        "The run could not be started: its workflow was disabled before it started"
    )
    assert (await platform.client.count_workflows(f"WorkflowId = '{orphan.id}'")).count == 0


async def test_two_reconcilers_correct_a_terminated_run_once(platform: Platform) -> None:
    wf = await platform.create(LONG)
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id, {"running"})
    await platform.client.get_workflow_handle(run_id).terminate(reason="twice?")
    await eventually(lambda: _terminated_visible(platform, run_id), within=10)

    results = await asyncio.gather(
        eager(platform).reconcile_once(), eager(platform).reconcile_once()
    )

    assert sum(run_id in corrected for corrected in results) == 1
    events = await platform.store.list_events(run_id, 0, 1000)
    assert [e["type"] for e in events].count("run_failed") == 1


async def _terminated_visible(platform: Platform, run_id: str) -> bool | None:
    query = f"WorkflowId = '{run_id}' AND ExecutionStatus = 'Terminated'"
    return (await platform.client.count_workflows(query)).count == 1 or None


async def test_a_terminated_run_with_many_open_node_runs_has_each_closed(
    platform: Platform,
) -> None:
    """The correction reads the run's node runs a page at a time (a wide run's all at once
    could be gigabytes): every open one on every page is closed."""
    reconciler = Reconciler(
        platform.client, platform.store, task_queue=platform.task_queue, interval=0.2
    )
    wf, run_id = await a_step_under_way(platform)
    waiting = [node_run(run_id, id=f"{run_id}.waiting.{i}", started_at=at(i)) for i in range(450)]
    for record in waiting:
        await platform.store.upsert_node_run(record)
    await platform.client.get_workflow_handle(run_id).terminate(reason="operator")

    async def none_open() -> dict[str, Any] | None:
        run = await platform.wait(wf, run_id)
        statuses = {n["status"] for n in run["nodeRuns"]}
        return run if not statuses & {"pending", "running"} else None

    loop = asyncio.create_task(reconciler.run_forever())
    try:
        # The run's end is written first, then its node runs are closed.
        run = await eventually(none_open, within=10)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert run["status"] == "failed"
    closed = {n["id"]: n for n in run["nodeRuns"] if n["id"].startswith(f"{run_id}.waiting.")}
    assert len(closed) == 450
    assert {n["status"] for n in closed.values()} == {"failed"}
    assert {n["error"] for n in closed.values()} == {"Terminated in Temporal: operator"}
