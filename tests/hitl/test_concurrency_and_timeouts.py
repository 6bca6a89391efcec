"""Exactly-once decisions, gates in parallel branches, durable timeouts, the inbox."""

import asyncio
from typing import Any

from tests.builders import delay, echo, loop, parallel
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.platform import Platform
from tests.support.polling import eventually


async def test_concurrent_decisions_on_one_gate_yield_exactly_one_200(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "gate")
    responses = await asyncio.gather(
        *[approve(platform, wf, run_id, stepId="gate", resolution="confirm") for _ in range(10)]
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * 9, codes
    run = await platform.wait(wf, run_id)
    assert len(run["resolvedRequirements"]) == 1
    assert [n["nodeName"] for n in run["nodeRuns"]] == ["gate"]


async def test_a_decision_that_lost_to_another_says_the_gate_was_decided(
    platform: Platform,
) -> None:
    # It read "Run is not awaiting approval", as if the gate had never been (an audit).
    nodes = [echo("gate", {"requiresConfirmation": True}), delay("after", 5)]
    wf, run_id = await start(platform, nodes)
    await wait_for_gate(platform, wf, run_id, "gate")
    first = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert first.status_code == 200, first.text
    again = await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    assert again.status_code == 409, again.text
    assert again.json()["error"]["message"] == (
        "Run is not awaiting approval: requirement 'gate' was already decided"
    )
    await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")


async def test_identical_decisions_at_once_decide_only_the_iteration_their_callers_saw(
    platform: Platform,
) -> None:
    # A loop's next iteration review has the same stepId: ten confirms of iteration 1 sent
    # at once decided iterations 1 to 3, two of them never shown to anyone.
    review = {"requiresIterationReview": True}
    body = loop("lp", echo("work"), max_iterations=6, humanReview=review, id="lp")
    wf, run_id = await start(platform, [body])
    await wait_for_gate(platform, wf, run_id, "lp")
    responses = await asyncio.gather(
        *[approve(platform, wf, run_id, stepId="lp", resolution="confirm") for _ in range(10)]
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * 9, codes
    run = await wait_for_gate(platform, wf, run_id, "lp")
    decided = [r for r in run["resolvedRequirements"] if r["stepId"] == "lp"]
    assert len(decided) == 1, decided
    assert (await control(platform, wf, run_id, "cancel")).status_code == 200


async def test_parallel_branches_hold_on_their_own_gates(platform: Platform) -> None:
    wf, run_id = await start(
        platform,
        [
            {
                "name": "fan",
                "nodeType": "parallel",
                "children": [
                    echo("left", {"requiresConfirmation": True}),
                    echo("right", {"requiresConfirmation": True}),
                    {
                        "id": "free",
                        "name": "free",
                        "nodeType": "step",
                        "executorKey": "builtin:echo",
                    },
                ],
            }
        ],
    )
    await wait_for_gate(platform, wf, run_id, "left")
    run = await wait_for_gate(platform, wf, run_id, "right")
    assert {r["stepId"] for r in run["pendingRequirements"]} == {"left", "right"}
    statuses = {n["nodeName"]: n["status"] for n in run["nodeRuns"]}
    assert statuses["free"] == "completed"  # the other branch kept running
    response = await approve(platform, wf, run_id, stepId="right", resolution="confirm")
    assert response.json()["status"] == "awaiting_approval"
    run = await platform.wait(wf, run_id, {"awaiting_approval"})

    async def only_left_pending() -> dict[str, Any] | None:
        run: dict[str, Any] = (
            await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")
        ).json()
        return run if [r["stepId"] for r in run["pendingRequirements"]] == ["left"] else None

    run = await eventually(only_left_pending, within=2.5)
    assert [r["stepId"] for r in run["pendingRequirements"]] == ["left"]
    await approve(platform, wf, run_id, stepId="left", resolution="reject")
    run = await platform.wait(wf, run_id)
    statuses = {n["nodeName"]: n["status"] for n in run["nodeRuns"]}
    assert statuses == {
        "fan": "completed",
        "left": "skipped",
        "right": "completed",
        "free": "completed",
    }


async def timed_out(platform: Platform, on_timeout: str) -> dict[str, Any]:
    wf, run_id = await start(
        platform,
        [
            echo(
                "gate", {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": on_timeout}
            ),
            echo("after"),
        ],
    )
    run = await wait_for_gate(platform, wf, run_id, "gate")
    assert run["pendingRequirements"][0]["timeoutAt"] is not None
    return await platform.wait(wf, run_id)


async def test_a_timeout_with_approve_runs_the_step(platform: Platform) -> None:
    run = await timed_out(platform, "approve")
    assert run["status"] == "completed"
    assert [n["status"] for n in run["nodeRuns"]] == ["completed", "completed"]
    decided = run["resolvedRequirements"][0]
    assert decided["decidedBy"] is None and decided["source"] == "timeout"
    assert decided["resolution"] == "timeout:approve"


async def test_a_timeout_with_approve_of_a_form_missing_a_required_value_says_so(
    platform: Platform,
) -> None:
    # The node was skipped with "skipped by reviewer", though no reviewer acted (a form
    # that cannot be completed says why instead).
    review = {
        "requiresUserInput": True,
        "userInputSchema": [{"name": "amount", "type": "number", "required": True}],
        "timeoutSeconds": 1,
        "onTimeout": "approve",
    }
    wf, run_id = await start(platform, [echo("form", review), echo("after")])
    await wait_for_gate(platform, wf, run_id, "form")
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    form, after = run["nodeRuns"]
    assert (form["status"], after["status"]) == ("skipped", "completed")
    assert form["error"].startswith("timed out with an incomplete form: "), form["error"]
    assert "amount" in form["error"]


async def test_a_timeout_with_approve_of_a_form_records_the_defaults_it_ran_with(
    platform: Platform,
) -> None:
    # The audit trail said userInput null while the step ran with the form's defaults.
    review = {
        "requiresUserInput": True,
        "userInputSchema": [{"name": "lvl", "fieldType": "string", "defaultValue": "low"}],
        "timeoutSeconds": 1,
        "onTimeout": "approve",
    }
    wf, run_id = await start(platform, [echo("form", review, lvl="{{ user_input.lvl }}")])
    await wait_for_gate(platform, wf, run_id, "form")
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"]["config"] == {"lvl": "low"}
    decided = run["resolvedRequirements"][0]
    assert (decided["resolution"], decided["userInput"]) == ("timeout:approve", {"lvl": "low"})


async def test_a_timeout_with_approve_of_a_route_selection_without_suggestion_skips_it(
    platform: Platform,
) -> None:
    # It failed the run, where a timed-out form without a required value skips its step.
    router = {
        "id": "pick",
        "name": "pick",
        "nodeType": "router",
        "conditionCel": "input.picks",
        "choices": [{"name": "a", "steps": [echo("ra")]}, {"name": "b", "steps": [echo("rb")]}],
        "humanReview": {"requiresUserInput": True, "timeoutSeconds": 1, "onTimeout": "approve"},
    }
    wf = await platform.create({"nodes": [router, echo("after")]}, enable=True)
    run_id = await platform.trigger(wf, {"picks": []})
    gate = await wait_for_gate(platform, wf, run_id, "pick")
    assert gate["pendingRequirements"][0]["requiresRouteSelection"] is True
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    by_name = {n["nodeName"]: n for n in run["nodeRuns"]}
    assert set(by_name) == {"pick", "after"}
    assert by_name["pick"]["status"] == "skipped"
    assert by_name["pick"]["error"].startswith("timed out with no suggested route")
    assert by_name["after"]["status"] == "completed"
    assert run["resolvedRequirements"][0]["resolution"] == "timeout:approve"


async def test_a_timeout_with_skip_skips_the_step(platform: Platform) -> None:
    run = await timed_out(platform, "skip")
    assert run["status"] == "completed"
    assert [n["status"] for n in run["nodeRuns"]] == ["skipped", "completed"]
    # Not "skipped by reviewer": no reviewer acted.
    assert run["nodeRuns"][0]["error"] == "skipped: the gate timed out (onTimeout: skip)"


async def test_a_decision_after_the_timer_decided_the_gate_says_it_timed_out(
    platform: Platform,
) -> None:
    # It was answered "Run is not awaiting approval", as if the gate had never been.
    review = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": "skip"}
    wf, run_id = await start(platform, [echo("gate", review), delay("after", 5)])
    run = await platform.wait(wf, run_id, {"running"})
    while not run["resolvedRequirements"]:
        await asyncio.sleep(0.1)
        run = await platform.wait(wf, run_id, {"running"})
    late = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert late.status_code == 409, late.text
    timeout_at = run["resolvedRequirements"][0]["timeoutAt"]
    assert late.json()["error"]["message"] == (
        f"The gate on step 'gate' timed out at {timeout_at}; its onTimeout applies"
    )
    assert (await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")).is_success


async def test_a_timeout_with_cancel_cancels_the_run(platform: Platform) -> None:
    run = await timed_out(platform, "cancel")
    assert run["status"] == "cancelled"
    assert run["resolvedRequirements"][0]["source"] == "timeout"
    # The timed-out gate's node run ends cancelled, not awaiting approval.
    (gate,) = run["nodeRuns"]
    assert gate["status"] == "cancelled" and gate["error"] == "Cancelled at 'gate' (timed out)"


async def test_the_approvals_inbox_lists_pending_gates_oldest_first(
    platform: Platform,
) -> None:
    first_wf, first = await start(
        platform, [echo("g1", {"requiresConfirmation": True, "confirmationMessage": "first?"})]
    )
    await wait_for_gate(platform, first_wf, first, "g1")
    second_wf, second = await start(platform, [echo("g2", {"requiresConfirmation": True})])
    await wait_for_gate(platform, second_wf, second, "g2")
    inbox = (await platform.api.get("/api/v1/approvals")).json()
    mine = [a for a in inbox["approvals"] if a["runId"] in (first, second)]
    assert [a["stepId"] for a in mine] == ["g1", "g2"]
    assert mine[0]["message"] == "first?" and mine[0]["workflowId"] == first_wf
    assert mine[0]["ageSeconds"] >= 0 and mine[0]["requirement"]["stepId"] == "g1"


async def test_gates_of_one_run_opened_at_once_are_listed_in_the_definitions_order(
    platform: Platform,
) -> None:
    # Opened in one workflow task, they share their time, and were ordered by step id.
    names = ["zulu", "yankee", "xray", "whiskey"]
    gated = [echo(n, {"requiresConfirmation": True}) for n in names]
    wf, run_id = await start(platform, [parallel("all", *gated)])
    for n in names:
        await wait_for_gate(platform, wf, run_id, n)
    inbox = (await platform.api.get("/api/v1/approvals")).json()
    assert [a["stepId"] for a in inbox["approvals"] if a["runId"] == run_id] == names


async def test_live_requirements_come_from_the_workflow_query(platform: Platform) -> None:
    wf, run_id = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "gate")
    live = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}/requirements")).json()
    assert live["source"] == "workflow"
    assert [r["stepId"] for r in live["pendingRequirements"]] == ["gate"]


async def test_a_double_clicked_confirm_does_not_approve_the_output_review_opened_since(
    platform: Platform,
) -> None:
    # A step's output review opens on the node run its confirmation opened on: a confirm
    # sent twice at once decided both gates, the output approved unseen (an audit).
    review = {"requiresConfirmation": True, "requiresOutputReview": True}
    wf, run_id = await start(platform, [echo("gate", review)])
    await wait_for_gate(platform, wf, run_id, "gate")
    responses = await asyncio.gather(
        *[approve(platform, wf, run_id, stepId="gate", resolution="confirm") for _ in range(2)]
    )
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    run = await wait_for_gate(platform, wf, run_id, "gate")
    [waiting] = run["pendingRequirements"]
    assert waiting["kind"] == "output_review" and waiting["isPostExecution"]
    assert [r["kind"] for r in run["resolvedRequirements"]] == ["before"]
    # Confirmed with the output in view, the run goes on.
    seen = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert seen.status_code == 200, seen.text
    assert (await platform.wait(wf, run_id))["status"] == "completed"
