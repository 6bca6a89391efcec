"""The run's status search attribute shows the status the run has when it blocks.

Operators filter on `TrellisRunStatus` in the Temporal Web UI; each upsert costs the run
a history event and the server a visibility update, so a workflow task upserts once, to
its last status (status_attribute.py).
"""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.converter import default

from temporal_workflows import search_attributes
from tests.builders import delay, echo, workflow
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.continuing import start_continuing
from tests.support.platform import Platform
from tests.support.polling import eventually

REQUIRES_CONFIRMATION = {"requiresConfirmation": True}


async def _upserted(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The values the history's search-attribute upserts gave TrellisRunStatus, in order."""
    values = []
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            continue
        fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes
        payload = fields.indexed_fields["TrellisRunStatus"]
        values.append(default().payload_converter.from_payload(payload, str))
    return values


async def _shows(handle: WorkflowHandle[Any, Any], status: str) -> None:
    """Wait until the attribute reads `status` (the server indexes it a moment after)."""

    async def shown() -> bool | None:
        attributes = (await handle.describe()).typed_search_attributes
        return True if attributes.get(search_attributes.RUN_STATUS) == status else None

    await eventually(shown)


async def _closed(handle: WorkflowHandle[Any, Any]) -> None:
    async def closed() -> bool | None:
        status = (await handle.describe()).status
        return True if status != WorkflowExecutionStatus.RUNNING else None

    await eventually(closed)


async def test_a_run_that_starts_and_ends_in_one_task_upserts_only_its_end(
    platform: Platform,
) -> None:
    wf = await platform.create(workflow("wf", echo("a"), echo("b"), echo("c")))
    run_id = await platform.trigger(wf)
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    handle = platform.client.get_workflow_handle(run_id)
    await _closed(handle)
    assert await _upserted(handle) == ["completed"]
    await _shows(handle, "completed")


async def test_a_decision_in_the_task_that_ends_the_run_skips_running(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [delay("first", 0), echo("gated", REQUIRES_CONFIRMATION)])
    await wait_for_gate(platform, wf, run_id, "gated")
    handle = platform.client.get_workflow_handle(run_id)
    await _shows(handle, "awaiting_approval")
    answer = await approve(platform, wf, run_id, stepId="gated", resolution="confirm")
    assert answer.status_code == 200, answer.text
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    await _closed(handle)
    # The decision's task ran the gated echo and ended the run: `running` is never shown.
    assert await _upserted(handle) == ["running", "awaiting_approval", "completed"]


async def test_a_gate_at_the_start_skips_running(platform: Platform) -> None:
    wf, run_id = await start(platform, [echo("gated", REQUIRES_CONFIRMATION), delay("after", 0)])
    await wait_for_gate(platform, wf, run_id, "gated")
    handle = platform.client.get_workflow_handle(run_id)
    assert await _upserted(handle) == ["awaiting_approval"]
    assert (
        await approve(platform, wf, run_id, stepId="gated", resolution="confirm")
    ).status_code == 200
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    await _closed(handle)
    assert await _upserted(handle) == ["awaiting_approval", "running", "completed"]


async def test_a_paused_run_shows_paused_and_then_running_again(platform: Platform) -> None:
    wf, run_id = await start(platform, [delay("slow", 1.5), delay("after", 0)])
    handle = platform.client.get_workflow_handle(run_id)
    await platform.wait(wf, run_id, {"running"})
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    await _shows(handle, "paused")
    assert (await control(platform, wf, run_id, "resume")).status_code == 200
    await _shows(handle, "running")
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    await _closed(handle)
    assert await _upserted(handle) == ["running", "paused", "running", "completed"]


async def test_a_run_that_continues_as_new_does_not_show_its_status_again(
    platform: Platform,
) -> None:
    run_id = "run-status-attribute-can"
    nodes = [
        {
            "id": "L",
            "name": "L",
            "nodeType": "loop",
            "loopConfig": {"maxIterations": 30},
            "children": [delay("tick", 0)],
        }
    ]
    wf = await start_continuing(platform, run_id, nodes, after_events=40)
    assert (await platform.wait(wf, run_id, within=60))["status"] == "completed"
    executions = [e async for e in platform.client.list_workflows(f"WorkflowId = '{run_id}'")]
    assert len(executions) > 1
    by_start = sorted(executions, key=lambda e: e.start_time)
    upserted = [
        await _upserted(platform.client.get_workflow_handle(run_id, run_id=e.run_id))
        for e in by_start
    ]
    # Each execution after the first starts with the status it carried (`running`).
    assert upserted == [["running"], *([[]] * (len(by_start) - 2)), ["completed"]]
