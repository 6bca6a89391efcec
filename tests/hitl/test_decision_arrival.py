"""A decision without `gate` or a key decides only a gate opening open when it arrived.

Two confirms sent at once, the second handled after the first's decision and the next
opening of the step's gate (an API busy with its dependencies and store, or on another
process than the worker), decided that one too: a loop's next iteration, an output
approved unseen (an outside audit). The held request below is that second confirm.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

from app.auth.caller import Caller
from app.schemas.control import ApproveRequest
from app.services.controls import ControlService
from tests.builders import echo, loop
from tests.hitl.helpers import approve, held_approve, start, wait_for_requirement
from tests.support.platform import Platform

CONFIRM = {"stepId": "lp", "resolution": "confirm"}
OPENED_SINCE = "opened after this request arrived"


def _reviewed_loop() -> dict[str, Any]:
    """Loop `lp`, each of its iterations reviewed (its gate opens once per iteration)."""
    return loop(
        "lp", echo("work"), max_iterations=5, humanReview={"requiresIterationReview": True}, id="lp"
    )


async def test_a_confirm_that_arrived_before_the_next_iteration_opened_does_not_decide_it(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [_reviewed_loop()])
    await wait_for_requirement(platform, wf, run_id, "lp", iteration=0)
    async with held_approve(platform, wf, run_id, **CONFIRM) as second:
        first = await approve(platform, wf, run_id, **CONFIRM)
        assert first.status_code == 200, first.text
        await wait_for_requirement(platform, wf, run_id, "lp", iteration=1)
        status, answer = await second()
    assert status == 409, answer
    message = answer["error"]["message"]
    assert OPENED_SINCE in message and "iteration 1" in message, message
    run = await wait_for_requirement(platform, wf, run_id, "lp", iteration=1)
    assert [r["iteration"] for r in run["resolvedRequirements"]] == [0]
    # Sent now, it decides the open one.
    again = await approve(platform, wf, run_id, **CONFIRM)
    assert again.status_code == 200, again.text
    await wait_for_requirement(platform, wf, run_id, "lp", iteration=2)
    await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")


async def test_a_double_clicked_confirm_handled_late_does_not_approve_the_output(
    platform: Platform,
) -> None:
    review = {"requiresConfirmation": True, "requiresOutputReview": True}
    wf, run_id = await start(platform, [echo("gate", review)])
    await wait_for_requirement(platform, wf, run_id, "gate", kind="before")
    confirm = {"stepId": "gate", "resolution": "confirm"}
    async with held_approve(platform, wf, run_id, **confirm) as second:
        first = await approve(platform, wf, run_id, **confirm)
        assert first.status_code == 200, first.text
        await wait_for_requirement(platform, wf, run_id, "gate", kind="output_review")
        status, answer = await second()
    assert status == 409 and OPENED_SINCE in answer["error"]["message"], answer
    run = await wait_for_requirement(platform, wf, run_id, "gate", kind="output_review")
    assert [r["kind"] for r in run["resolvedRequirements"]] == ["before"]
    seen = await approve(platform, wf, run_id, **confirm)
    assert seen.status_code == 200, seen.text
    assert (await platform.wait(wf, run_id))["status"] == "completed"


async def test_the_workflow_refuses_an_opening_after_the_arrival_when_none_was_shown(
    platform: Platform,
) -> None:
    # The record a decision reads may show no gate open (the first decision written, the
    # next opening not yet): unpinned, it reached the workflow once the next had opened.
    wf, run_id = await start(platform, [_reviewed_loop()])
    await wait_for_requirement(platform, wf, run_id, "lp", iteration=0)
    arrived = datetime.now(UTC)
    record = await platform.store.get_run(run_id)
    assert record is not None
    read_between = record.model_copy(update={"pending_requirements": []})
    assert (await approve(platform, wf, run_id, **CONFIRM)).status_code == 200
    await wait_for_requirement(platform, wf, run_id, "lp", iteration=1)
    controls = ControlService(
        temporal=platform.client, store=platform.store, caller=Caller("alice")
    )
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await controls.decide(read_between, ApproveRequest.model_validate(CONFIRM), None, arrived)
    assert OPENED_SINCE in str(refused.value.cause)
    run = await wait_for_requirement(platform, wf, run_id, "lp", iteration=1)
    assert [r["iteration"] for r in run["resolvedRequirements"]] == [0]
    await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
