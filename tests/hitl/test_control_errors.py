"""What Temporal answers to a control becomes the documented error, and changes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy

from activities.run_start import start_run_workflow
from activities.store.records import RunRecord
from app.services import controls
from temporal_workflows.contracts import WORKFLOW_TYPE, RunInput
from tests.builders import delay, echo
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.platform import Platform
from tests.support.polling import eventually

GATE = {"requiresConfirmation": True}


async def closed_behind_the_store(platform: Platform) -> tuple[str, str]:
    """A run the store shows waiting while Temporal has already terminated its workflow."""
    wf, run_id = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    await platform.client.get_workflow_handle(run_id).terminate("gone behind the API's back")
    return wf, run_id


async def test_a_pause_of_a_run_whose_workflow_is_gone_is_409_no_longer_running(
    platform: Platform,
) -> None:
    wf, run_id = await closed_behind_the_store(platform)
    response = await control(platform, wf, run_id, "pause")
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "conflict"
    assert error["message"].startswith(f"Run {run_id} is no longer running (")
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "awaiting_approval"


async def test_a_decision_on_a_run_whose_workflow_is_gone_is_409(platform: Platform) -> None:
    wf, run_id = await closed_behind_the_store(platform)
    response = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert response.status_code == 409, response.text
    assert "is no longer running" in response.json()["error"]["message"]


async def running_without_a_worker(
    platform: Platform, task_queue: str | None = None, status: str = "running"
) -> tuple[str, RunRecord]:
    """A run shown `status` whose workflow is on a task queue no worker polls (the caller
    terminates it, or starts a worker on `task_queue`)."""
    wf = await platform.create({"nodes": [echo("a")]})
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    record = RunRecord(
        id=f"run-{uuid.uuid4()}",
        workflow_definition_id=wf,
        workflow_version=workflow.version,
        definition_snapshot=workflow.spec(),
        status=status,
    )
    await platform.store.insert_run(record)
    await start_run_workflow(
        platform.client, record, task_queue=task_queue or f"nobody-{uuid.uuid4()}"
    )
    return wf, record


async def test_an_update_no_worker_takes_in_time_is_503(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controls, "UPDATE_TIMEOUT_SECONDS", 0.5)
    wf, record = await running_without_a_worker(platform)
    try:
        # The update waits for a worker forever.
        response = await control(platform, wf, record.id, "pause")
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "service_unavailable"
        assert error["message"].startswith("No worker took the request in time")
    finally:
        await platform.client.get_workflow_handle(record.id).terminate("test over")


async def test_a_cancel_repeated_while_no_worker_acts_on_it_is_logged_once(
    platform: Platform,
) -> None:
    # Both answered 200 and each logged a cancel_requested event.
    wf, record = await running_without_a_worker(platform)
    try:
        # The run stays running, cancel after cancel.
        for _ in range(2):
            response = await control(platform, wf, record.id, "cancel")
            assert response.status_code == 200, response.text
        events = await platform.store.list_events(record.id, 0, 100)
        assert [e["type"] for e in events] == ["cancel_requested"]
    finally:
        await platform.client.get_workflow_handle(record.id).terminate("test over")


async def test_a_decision_naming_a_malformed_step_id_is_400_and_the_gate_stays_open(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    response = await approve(platform, wf, run_id, stepId="!gate", resolution="confirm")
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"][0]["path"] == "stepId"
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "awaiting_approval"
    assert [r["stepId"] for r in run["pendingRequirements"]] == ["gate"]


# Raw JSON: a client library would refuse to write NaN or a lone surrogate itself.
DEEP = '{"a":' * 200 + "1" + "}" * 200
BAD_DECISIONS = {
    f'"editedOutput": {DEEP}': "editedOutput.a.a",
    '"editedOutput": {"x": "\\ud800"}': "editedOutput.x is not valid Unicode",
    '"editedOutput": {"x": NaN}': "editedOutput.x is not a finite number",
    '"userInput": {"amount": NaN}': "userInput.amount is not a finite number",
    '"userInput": {"amount": 1e400}': "userInput.amount is not a finite number",
    '"selectedChoices": ["\\udfff"]': "selectedChoices[0] is not valid Unicode",
    # More values than a workflow task decodes in time (the update carries them).
    f'"userInput": {{"xs": [{",".join(["0"] * 100_000)}]}}': (
        "userInput holds more than 100000 JSON values"
    ),
    # A lone text field: pydantic refuses a lone surrogate in it itself.
    '"feedback": "\\ud800"': "feedback: Input should be a valid string",
}


async def test_a_decision_carrying_data_no_run_can_hold_is_400_and_the_gate_stays_open(
    platform: Platform,
) -> None:
    # Each was a 500 (the update could not decode it, or the answer could not be written),
    # or NaN was stored as null in the step's output.
    wf, run_id = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    for field, problem in BAD_DECISIONS.items():
        response = await platform.api.post(
            f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
            content=f'{{"stepId": "gate", "resolution": "confirm", {field}}}',
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 400, (field, response.text)
        assert response.json()["error"]["code"] == "invalid_request"
        assert problem in response.text, (field, response.text)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "awaiting_approval"
    assert [r["stepId"] for r in run["pendingRequirements"]] == ["gate"]
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert decided.status_code == 200, decided.text


async def _shown_open_before_the_workflow(platform: Platform) -> tuple[str, str]:
    """A run whose store shows its gate open while the workflow is still before it: what a
    workflow task lost with a worker or a Temporal restart leaves behind (the task wrote
    the store, then runs again and opens the gate anew)."""
    wf, seen = await start(platform, [echo("gate", GATE)])
    shown = (await wait_for_gate(platform, wf, seen, "gate"))["pendingRequirements"]
    run_id = await platform.trigger(
        wf_two := await platform.create({"nodes": [delay("wait", 2), echo("gate", GATE)]})
    )

    async def running() -> RunRecord | None:
        run = await platform.store.get_run(run_id)
        return run if run is not None and run.status == "running" else None

    run = await eventually(running)
    # The gate as that task opened it: this run's node run (its opening time is another).
    shown = [{**gate, "nodeRunId": f"{run_id}.gate.1"} for gate in shown]
    assert await platform.store.update_run(
        run_id, run.rev, {"status": "awaiting_approval", "pending_requirements": shown}
    )
    return wf_two, run_id


async def test_a_decision_waits_for_a_gate_the_store_shows_before_the_workflow_opens_it(
    platform: Platform,
) -> None:
    # It was 409 "Run is not awaiting approval" while the run detail said it was.
    wf, run_id = await _shown_open_before_the_workflow(platform)
    response = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert response.status_code == 200, response.text
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert [r["stepId"] for r in run["resolvedRequirements"]] == ["gate"]


async def test_a_gate_shown_open_that_the_workflow_never_opens_is_409_after_the_wait(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controls, "GATE_SETTLE_SECONDS", 0.5)
    wf, run_id = await _shown_open_before_the_workflow(platform)
    response = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert response.status_code == 409, response.text
    assert response.json()["error"]["message"] == "Run is not awaiting approval"

    async def gate_reached() -> dict[str, Any] | None:
        run: dict[str, Any] = (
            await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")
        ).json()
        return run if any(n["nodeId"] == "gate" for n in run["nodeRuns"]) else None

    run = await eventually(gate_reached)
    assert run["resolvedRequirements"] == [], "the refused decision changed nothing"
    assert [r["stepId"] for r in run["pendingRequirements"]] == ["gate"]
    later = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert later.status_code == 200, later.text


async def test_a_cancel_of_a_run_whose_workflow_is_gone_is_409_and_logs_nothing(
    platform: Platform,
) -> None:
    # Temporal takes a cancellation of a closed workflow and does nothing: it was answered
    # 200 "Cancellation requested; the run stops shortly", and the run never did.
    wf, run_id = await closed_behind_the_store(platform)
    response = await control(platform, wf, run_id, "cancel")
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["message"].startswith(f"Run {run_id} is no longer running (its workflow is ")
    assert "terminated in Temporal" in error["message"]
    kinds = [e["type"] for e in await platform.store.list_events(run_id, 0, 100)]
    assert "cancel_requested" not in kinds


async def test_a_cancel_ends_a_run_whose_workflow_tasks_all_fail(platform: Platform) -> None:
    # Its workflow never handled the cancel: answered 200 "the run stops shortly", the run
    # stayed pending for ever (an outside audit: an input too large to decode in a task).
    # Here each task fails on a switch this release does not know; none ever completes.
    wf, record = await running_without_a_worker(platform, status="pending")
    await platform.client.get_workflow_handle(record.id).terminate("replaced below")
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    arg = RunInput(
        run_id=record.id, workflow_id=wf, workflow_version=1, definition=workflow.spec()
    ).model_dump(mode="json", by_alias=True)
    handle = await platform.client.start_workflow(
        WORKFLOW_TYPE,
        {**arg, "laterReleaseSwitch": True},
        id=record.id,
        task_queue=platform.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    )

    async def failed() -> bool:
        return any(
            [
                e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
                async for e in handle.fetch_history_events()
            ]
        )

    await eventually(failed, within=20)
    response = await control(platform, wf, record.id, "cancel")
    assert response.status_code == 200, response.text
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{record.id}")).json()
    assert run["status"] == "cancelled" and run["finishedAt"] is not None
    described = await handle.describe()
    assert described.status == WorkflowExecutionStatus.TERMINATED
    events = [e["type"] for e in await platform.store.list_events(record.id, 0, 100)]
    assert events == ["cancel_requested", "run_cancelled"]
    # A run whose tasks have not failed (no worker yet) is left to handle the cancel itself.
    wf, waiting = await running_without_a_worker(platform, status="pending")
    try:
        assert (await control(platform, wf, waiting.id, "cancel")).status_code == 200
        stored = await platform.store.get_run(waiting.id)
        assert stored is not None and stored.status == "pending"
    finally:
        await platform.client.get_workflow_handle(waiting.id).terminate("test over")
