"""A run whose input carries a switch this code does not know waits, rather than diverge.

Each behaviour change of the interpreter is switched on by a flag the starter sets in
the run's input. A release that does not know a flag would run such a run the old way
(a rollback, or a worker left behind in a rolling deploy), and the release that started
it could then no longer replay its history. Refused, the workflow task fails and is
retried until a worker that knows the flag takes it.
"""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from temporal_workflows.contracts import WORKFLOW_TYPE, RunInput
from temporal_workflows.definition import WorkflowNode, WorkflowSpec
from tests.support.platform import Platform
from tests.support.polling import eventually


def _run_input(**extra: object) -> dict[str, object]:
    spec = WorkflowSpec(
        name="Later switch",
        nodes=[WorkflowNode(id="s1", name="Echo", node_type="step", executor_key="builtin:echo")],
    )
    known = RunInput(
        run_id=f"run-{uuid.uuid4()}", workflow_id="wf", workflow_version=1, definition=spec
    )
    return {**known.model_dump(mode="json", by_alias=True), **extra}


def test_a_field_the_run_input_does_not_know_is_refused() -> None:
    with pytest.raises(ValidationError, match="laterReleaseSwitch"):
        RunInput.model_validate(_run_input(laterReleaseSwitch=True))
    assert RunInput.model_validate(_run_input()).run_id.startswith("run-")


async def test_a_run_started_with_an_unknown_switch_waits_for_a_worker_that_knows_it(
    platform: Platform,
) -> None:
    arg = _run_input(laterReleaseSwitch=True)
    handle = await platform.client.start_workflow(
        WORKFLOW_TYPE, arg, id=str(arg["runId"]), task_queue=platform.task_queue
    )
    try:

        async def refused() -> str | None:
            async for event in handle.fetch_history_events():
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    return event.workflow_task_failed_event_attributes.failure.message
            return None

        assert await eventually(refused, within=20) == "Failed decoding arguments"
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    finally:
        await handle.terminate("test done")
    # The same input without the switch runs on this worker.
    known = _run_input()
    result = await platform.client.execute_workflow(
        WORKFLOW_TYPE, known, id=str(known["runId"]), task_queue=platform.task_queue
    )
    assert result["status"] == "completed", result
