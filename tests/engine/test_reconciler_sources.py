"""What the reconciler takes as a run's end: only a workflow's latest execution (a reset
goes on in a new one), a closed workflow's own result when the store lost its end (a store
restored from an older copy), and every node run it closes logs its end."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest

from activities.store.sqlite import SqliteStore
from app.reconciler import Reconciler
from tests.builders import echo
from tests.engine.test_reconciler import ECHO, a_step_under_way, orphan_of
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.reconciling import eager

GATE = {"requiresConfirmation": True, "onReject": "cancel"}


async def first_completed_task(platform: Platform, run_id: str) -> int | None:
    """The event id of the run's first completed workflow task, None before one completed.
    (The store shows a gate before the task that opened it completes: the outbox's local
    activity writes it within that task.)"""
    handle = platform.client.get_workflow_handle(run_id)
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_completed_event_attributes"):
            return event.event_id
    return None


async def reset_to_its_first_task(platform: Platform, run_id: str) -> None:
    """What the Web UI's and the CLI's "reset to the first workflow task" do."""
    first_completed = await eventually(lambda: first_completed_task(platform, run_id))
    await platform.client.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=platform.client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=run_id),
            reason="operator reset",
            workflow_task_finish_event_id=first_completed,
            request_id=str(uuid.uuid4()),
        )
    )


async def test_a_reset_run_ends_as_its_new_execution_does(platform: Platform) -> None:
    # The execution a reset starts from is terminated, its TrellisRunStatus still open:
    # the reconciler took it for the run's end ("Terminated in Temporal", failed) and
    # overwrote the end the new execution then wrote.
    wf, run_id = await start(platform, [echo("a"), echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    await reset_to_its_first_task(platform, run_id)
    reconciler = eager(platform)
    assert run_id not in await reconciler.reconcile_once()
    await wait_for_gate(platform, wf, run_id, "gate")
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert decided.status_code == 200, decided.text
    run = await platform.wait(wf, run_id)
    assert run_id not in await reconciler.reconcile_once()
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run
    assert run["errorSummary"] is None


Copy = tuple[tuple[Any, ...], list[tuple[Any, ...]]]


def put_back(store: SqliteStore, copy: Copy) -> None:
    """The run's rows as an older copy of the store had them (a backup restored)."""
    run, node_runs = copy
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET doc = ?, status = ?, rev = ? WHERE id = ?", run)
        db.execute("DELETE FROM node_runs WHERE workflow_run_id = ?", (run[-1],))
        for row in node_runs:
            db.execute(f"INSERT INTO node_runs VALUES ({', '.join('?' * len(row))})", row)


def taken(store: SqliteStore, run_id: str) -> Copy:
    with sqlite3.connect(store.path) as db:
        doc, status, rev = db.execute(
            "SELECT doc, status, rev FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        node_runs = db.execute(
            "SELECT * FROM node_runs WHERE workflow_run_id = ?", (run_id,)
        ).fetchall()
    return (doc, status, rev, run_id), node_runs


@pytest.mark.parametrize(
    ("resolution", "ended"), [("confirm", "completed"), ("reject", "cancelled")]
)
async def test_a_run_a_restored_store_shows_open_is_closed_as_temporal_closed_it(
    platform: Platform, resolution: str, ended: str
) -> None:
    # Its workflow recorded its end (in the store that was replaced), so no search
    # attribute said it open: it stayed `awaiting_approval` for good.
    store = platform.store
    assert isinstance(store, SqliteStore)
    wf, run_id = await start(platform, [echo("gate", GATE)], {"n": 7})
    await wait_for_gate(platform, wf, run_id, "gate")
    backup = taken(store, run_id)
    decided = await approve(platform, wf, run_id, stepId="gate", resolution=resolution)
    assert decided.status_code == 200, decided.text
    await platform.wait(wf, run_id)
    put_back(store, backup)
    assert (await platform.wait(wf, run_id, {"awaiting_approval"}))["status"]

    assert run_id in await eager(platform).reconcile_once()

    run = await platform.wait(wf, run_id)
    assert run["status"] == ended, run
    assert run["pendingRequirements"] == []
    if ended == "completed":
        assert run["finalOutput"] == {"config": {}, "input": {"n": 7}}, run
    # The gate's node run the copy shows open ends as its run did: a completed run's did
    # not fail (it was closed `failed`, a red step in a completed run).
    [gate] = run["nodeRuns"]
    assert gate["status"] == ended and (gate["error"] is None) == (ended == "completed")
    events = await platform.store.list_events(run_id, 0, 100)
    assert [e["type"] for e in events][-2:] == [f"node_{ended}", f"run_{ended}"]


async def test_a_run_whose_workflow_temporal_no_longer_has_is_closed_as_lost(
    platform: Platform,
) -> None:
    # Past the namespace's retention, or Temporal's state replaced: no query found it,
    # and it stayed `running` for good (a cancel was 409: "workflow not found").
    wf, record = await orphan_of(platform, ECHO)
    assert await platform.store.update_run(record.id, 5, {"status": "running"})
    pending_wf, pending = await orphan_of(platform, ECHO)  # left to the start sweep

    assert (
        record.id
        in await Reconciler(
            platform.client, platform.store, task_queue=platform.task_queue
        ).reconcile_once()
    )

    run = await platform.wait(wf, record.id)
    assert run["status"] == "failed"
    assert run["errorSummary"] == (
        "Its workflow is no longer in Temporal (deleted by an operator, past the namespace's"
        " retention, or Temporal's state was replaced) and the store has no end for it"
    )
    kinds = [e["type"] for e in await platform.store.list_events(record.id, 0, 10)]
    assert kinds == ["run_failed"]
    assert (await platform.wait(pending_wf, pending.id, {"pending"}))["status"] == "pending"


async def test_each_node_run_the_reconciler_closes_logs_its_end(platform: Platform) -> None:
    # The node run was closed in the store, but a stream (or `runs watch`) following the
    # run's events never heard it end.
    wf, run_id = await a_step_under_way(platform)
    await platform.client.get_workflow_handle(run_id).terminate(reason="operator")
    reconciler = eager(platform)
    corrected: list[str] = []
    while run_id not in corrected:
        corrected = await reconciler.reconcile_once()
    events = await platform.store.list_events(run_id, 0, 100)
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "run_failed", kinds
    ended = [e for e in events if e["type"] in ("node_failed", "node_cancelled")]
    run = await platform.wait(wf, run_id)
    closed = [n for n in run["nodeRuns"] if n["error"] == "Terminated in Temporal: operator"]
    # The step's own end (it hears the termination at its next heartbeat) may come first.
    if closed:
        assert [e["nodeRunId"] for e in ended] == [n["id"] for n in closed]
        assert ended[0]["error"] == "Terminated in Temporal: operator"
        assert kinds.index("node_failed") < kinds.index("run_failed")
    else:
        assert [e["type"] for e in ended] == ["node_cancelled"]


async def test_runs_open_in_temporal_that_the_store_lacks_are_named_once(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    # A store deleted or restored from an older copy lost runs Temporal still runs: they
    # went on calling their steps, and nothing said so.
    store = platform.store
    assert isinstance(store, SqliteStore)
    wf, run_id = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    kept_wf, kept = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, kept_wf, kept, "gate")
    with sqlite3.connect(store.path) as db:
        db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    reconciler = eager(platform)
    await reconciler.reconcile_once()
    said = [r.getMessage() for r in caplog.records if "are not in the store" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("1 run(s) open in Temporal"), said
    assert said[0].endswith(run_id) and kept not in said[0]
    await reconciler.reconcile_once()
    again = [r for r in caplog.records if "are not in the store" in r.getMessage()]
    assert len(again) == 1
