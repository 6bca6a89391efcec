"""Gates before and after steps, routers, conditions and loops, decided over HTTP."""

from typing import Any

from tests.builders import echo, transform
from tests.events.sse import read_all
from tests.hitl.helpers import approve, start, wait_for_gate, wait_for_requirement
from tests.support.platform import Platform


class TestConfirmation:
    async def test_the_run_holds_with_the_contract_requirement_shape(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(
            platform,
            [
                echo(
                    "send",
                    {
                        "requiresConfirmation": True,
                        "confirmationMessage": "Send it?",
                        "onReject": "skip",
                        "onTimeout": "cancel",
                    },
                )
            ],
        )
        run = await wait_for_gate(platform, wf, run_id, "send")
        assert run["status"] == "awaiting_approval"
        req = run["pendingRequirements"][0]
        assert req["schemaVersion"] == 1 and req["stepId"] == "send"
        assert req["stepName"] == "send" and req["stepType"] == "step"
        assert req["requiresConfirmation"] is True and req["requiresUserInput"] is False
        assert req["requiresOutputReview"] is False and req["requiresRouteSelection"] is False
        assert req["confirmationMessage"] == "Send it?" and req["isPostExecution"] is False
        assert req["confirmed"] is None and req["retryCount"] == 0
        assert req["onTimeout"] == "cancel" and req["onReject"] == "skip"
        assert req["timeoutAt"] is None
        assert run["nodeRuns"][0]["status"] == "awaiting_approval"

    async def test_confirm_runs_the_step_and_records_the_decision(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("send", {"requiresConfirmation": True})])
        await wait_for_gate(platform, wf, run_id, "send")
        response = await approve(platform, wf, run_id, stepId="send", resolution="confirm")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body == {
            "runId": run_id,
            "status": "running",
            "resolvedStepId": "send",
            "message": "Requirement resolved as confirm; run resuming",
        }
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed" and run["pendingRequirements"] == []
        decided = run["resolvedRequirements"][0]
        assert decided["resolution"] == "confirm" and decided["decidedBy"] == "dev"
        assert decided["source"] == "user"
        assert decided["confirmed"] is True and decided["decidedAt"]

    async def test_reject_with_skip_skips_the_node(self, platform: Platform) -> None:
        wf, run_id = await start(
            platform,
            [echo("send", {"requiresConfirmation": True, "onReject": "skip"}), echo("after")],
        )
        await wait_for_gate(platform, wf, run_id, "send")
        await approve(
            platform, wf, run_id, stepId="send", resolution="reject", feedback="not today"
        )
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert [n["status"] for n in run["nodeRuns"]] == ["skipped", "completed"]
        assert run["resolvedRequirements"][0]["rejectionFeedback"] == "not today"

    async def test_reject_with_cancel_cancels_the_run(self, platform: Platform) -> None:
        wf, run_id = await start(
            platform,
            [echo("send", {"requiresConfirmation": True, "onReject": "cancel"}), echo("after")],
        )
        await wait_for_gate(platform, wf, run_id, "send")
        answer = await approve(platform, wf, run_id, stepId="send", resolution="reject")
        # The answer said "running" and "run resuming", of a run the rejection cancels.
        assert answer.status_code == 200, answer.text
        assert (answer.json()["status"], answer.json()["message"]) == (
            "cancelled",
            "Requirement resolved as reject; the run is cancelled (the gate's onReject is cancel)",
        )
        run = await platform.wait(wf, run_id)
        assert run["status"] == "cancelled"
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["send"]
        # The gate is closed: its node run ends with the run, not left awaiting approval.
        (send,) = run["nodeRuns"]
        assert send["status"] == "cancelled" and send["finishedAt"]
        assert send["error"] == "Cancelled at 'send' (rejected by dev)"


class TestUserInput:
    REVIEW = {
        "requiresUserInput": True,
        "userInputMessage": "Who?",
        "userInputSchema": [
            {"name": "approver", "fieldType": "string", "required": True},
            {"name": "amount", "fieldType": "number", "required": False, "defaultValue": 5},
            {
                "name": "tier",
                "fieldType": "string",
                "required": False,
                "allowedValues": ["gold", "silver"],
            },
        ],
    }

    async def test_the_form_is_shown_in_the_runtime_shape(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("form", self.REVIEW)])
        run = await wait_for_gate(platform, wf, run_id, "form")
        schema = run["pendingRequirements"][0]["userInputSchema"]
        assert schema[0] == {
            "name": "approver",
            "fieldType": "str",
            "description": None,
            "required": True,
            "value": None,
            "allowedValues": None,
        }
        assert schema[1]["fieldType"] == "float" and schema[1]["value"] == 5
        assert schema[2]["allowedValues"] == ["gold", "silver"]

    async def test_values_reach_the_step_as_user_input(self, platform: Platform) -> None:
        wf, run_id = await start(
            platform,
            [
                echo(
                    "form",
                    self.REVIEW,
                    who="{{ user_input.approver }}",
                    amount="{{ user_input.amount }}",
                )
            ],
        )
        await wait_for_gate(platform, wf, run_id, "form")
        response = await approve(
            platform,
            wf,
            run_id,
            stepId="form",
            resolution="user_input",
            userInput={"approver": "ada", "tier": "gold"},
        )
        assert response.status_code == 200, response.text
        run = await platform.wait(wf, run_id)
        assert run["finalOutput"]["config"] == {"who": "ada", "amount": 5}
        # The audit trail keeps the values the step ran with, the default included.
        recorded = run["resolvedRequirements"][0]["userInput"]
        assert recorded == {"approver": "ada", "amount": 5, "tier": "gold"}

    async def test_input_that_breaks_the_schema_is_400_and_changes_nothing(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(platform, [echo("form", self.REVIEW)])
        await wait_for_gate(platform, wf, run_id, "form")
        bad_inputs = [
            ({"amount": 3}, "userInput.approver is required"),
            ({"approver": 7}, "userInput.approver must be a string"),
            ({"approver": "a", "amount": True}, "userInput.amount must be a number"),
            ({"approver": "a", "tier": "bronze"}, "userInput.tier must be one of"),
            ({"approver": "a", "extra": 1}, "unknown fields: extra"),
        ]
        for user_input, message in bad_inputs:
            response = await approve(
                platform, wf, run_id, stepId="form", resolution="user_input", userInput=user_input
            )
            assert response.status_code == 400, user_input
            assert message in response.json()["error"]["message"]
        # Every problem at once, each with its path (found by an audit: the first only, and
        # no details).
        several = await approve(
            platform,
            wf,
            run_id,
            stepId="form",
            resolution="user_input",
            userInput={"amount": "3", "tier": "bronze", "extra": 1},
        )
        assert several.status_code == 400, several.text
        error = several.json()["error"]
        assert error["details"] == [
            {"path": "userInput", "message": "has unknown fields: extra"},
            {"path": "userInput.approver", "message": "is required"},
            {"path": "userInput.amount", "message": "must be a number"},
            {"path": "userInput.tier", "message": "must be one of ['gold', 'silver']"},
        ], error
        assert error["message"].startswith(
            "userInput has unknown fields: extra; userInput.approver is required; "
        ), error
        missing = await approve(platform, wf, run_id, stepId="form", resolution="user_input")
        assert missing.status_code == 400
        run = await wait_for_gate(platform, wf, run_id, "form")
        assert run["status"] == "awaiting_approval" and run["resolvedRequirements"] == []

    async def test_a_confirm_takes_the_forms_defaults_whatever_user_input_it_sends(
        self, platform: Platform
    ) -> None:
        # A confirm's userInput skipped the check (which reads a confirm as the defaults)
        # and reached the step: "tier": "bronze" answered 200, then skipped the step as if
        # a timer had found the form incomplete; "amount": 999 ran it with 999.
        review = {
            "requiresUserInput": True,
            "userInputSchema": [
                {"name": "amount", "fieldType": "number", "required": True, "defaultValue": 5},
                {
                    "name": "tier",
                    "fieldType": "string",
                    "required": False,
                    "allowedValues": ["gold", "silver"],
                },
            ],
        }
        step = echo("form", review, amount="{{ user_input.amount }}")
        for sent in ({"tier": "bronze"}, {"amount": 999}):
            wf, run_id = await start(platform, [step])
            await wait_for_gate(platform, wf, run_id, "form")
            answer = await approve(
                platform, wf, run_id, stepId="form", resolution="confirm", userInput=sent
            )
            assert answer.status_code == 200, answer.text
            run = await platform.wait(wf, run_id)
            assert run["status"] == "completed", run["errorSummary"]
            assert run["nodeRuns"][0]["status"] == "completed"
            assert run["finalOutput"]["config"] == {"amount": 5}
            decided = run["resolvedRequirements"][0]
            # Recorded as the values the step ran with (it was null: the trail hid them).
            assert (decided["resolution"], decided["userInput"]) == ("confirm", {"amount": 5})


class TestOutputReview:
    REVIEW = {
        "requiresOutputReview": True,
        "outputReviewMessage": "Looks right?",
        "onReject": "retry",
        "maxRetries": 2,
    }

    async def test_the_output_is_shown_after_execution(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("draft", self.REVIEW, text="v1")])
        run = await wait_for_gate(platform, wf, run_id, "draft")
        req = run["pendingRequirements"][0]
        assert req["isPostExecution"] is True and req["requiresOutputReview"] is True
        assert req["stepOutput"]["config"] == {"text": "v1"}
        assert req["outputReviewMessage"] == "Looks right?"

    async def test_edit_replaces_the_output_downstream(self, platform: Platform) -> None:
        wf, run_id = await start(
            platform,
            [
                echo("draft", self.REVIEW, text="v1"),
                echo("publish", None, got="{{ previous_step_content.text }}"),
            ],
        )
        await wait_for_gate(platform, wf, run_id, "draft")
        response = await approve(
            platform, wf, run_id, stepId="draft", resolution="edit", editedOutput={"text": "edited"}
        )
        assert response.status_code == 200
        run = await platform.wait(wf, run_id)
        assert run["finalOutput"]["config"] == {"got": "edited"}
        assert run["nodeRuns"][0]["outputSnapshot"] == {"text": "edited"}

    async def test_the_event_stream_ends_the_reviewed_step_completed(
        self, platform: Platform
    ) -> None:
        # The accepted output was written with no node event: a client following node events
        # showed the step awaiting approval for good.
        wf, run_id = await start(platform, [echo("draft", self.REVIEW, text="v1")])
        await wait_for_gate(platform, wf, run_id, "draft")
        response = await approve(
            platform, wf, run_id, stepId="draft", resolution="edit", editedOutput={"text": "v2"}
        )
        assert response.status_code == 200
        run = await platform.wait(wf, run_id)
        assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [("draft", "completed")]
        events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
        kinds = [(m.event, m.json()["status"]) for m in events if m.event]
        decided = kinds.index(("requirement_resolved", "running"))
        assert kinds[decided - 2 : decided] == [
            ("node_awaiting_approval", "awaiting_approval"),
            ("awaiting_approval", "awaiting_approval"),
        ]
        assert kinds[decided + 1 :] == [
            ("node_completed", "completed"),
            ("run_completed", "completed"),
        ], kinds

    async def test_an_edit_to_null_sets_the_output_to_null(self, platform: Platform) -> None:
        # It was refused as an edit without editedOutput.
        wf, run_id = await start(platform, [echo("draft", self.REVIEW, text="v1")])
        await wait_for_gate(platform, wf, run_id, "draft")
        response = await approve(
            platform, wf, run_id, stepId="draft", resolution="edit", editedOutput=None
        )
        assert response.status_code == 200, response.text
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert run["nodeRuns"][0]["outputSnapshot"] is None

    async def test_edit_needs_edited_output(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("draft", self.REVIEW)])
        await wait_for_gate(platform, wf, run_id, "draft")
        response = await approve(platform, wf, run_id, stepId="draft", resolution="edit")
        assert response.status_code == 400
        assert "editedOutput" in response.json()["error"]["message"]

    async def test_reject_with_retry_runs_the_step_again_with_the_feedback(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(
            platform,
            [echo("draft", self.REVIEW, note="{{ has(rejection_feedback) ? 'x' : 'first' }}")],
        )
        await wait_for_gate(platform, wf, run_id, "draft")
        await approve(
            platform, wf, run_id, stepId="draft", resolution="reject", feedback="shorter please"
        )
        run = await wait_for_gate(platform, wf, run_id, "draft")
        while run["pendingRequirements"][0]["retryCount"] != 1:
            run = await wait_for_gate(platform, wf, run_id, "draft")
        await approve(platform, wf, run_id, stepId="draft", resolution="confirm")
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert len([n for n in run["nodeRuns"] if n["nodeName"] == "draft"]) == 2
        assert run["resolvedRequirements"][1]["retryCount"] == 1
        # The rejected output's node run is closed; the new one carries the step on.
        first, second = run["nodeRuns"]
        assert first["status"] == "failed" and first["finishedAt"]
        assert first["error"] == "rejected by reviewer: shorter please"
        assert second["status"] == "completed"

    async def test_rejections_past_max_retries_fail_the_run_and_its_node_runs(
        self, platform: Platform
    ) -> None:
        review = {**self.REVIEW, "maxRetries": 1}
        wf, run_id = await start(platform, [echo("draft", review), echo("after")])
        await wait_for_gate(platform, wf, run_id, "draft")
        await approve(platform, wf, run_id, stepId="draft", resolution="reject", feedback="a")
        run = await wait_for_gate(platform, wf, run_id, "draft")
        while run["pendingRequirements"][0]["retryCount"] != 1:
            run = await wait_for_gate(platform, wf, run_id, "draft")
        await approve(platform, wf, run_id, stepId="draft", resolution="reject", feedback="b")
        run = await platform.wait(wf, run_id)
        assert run["status"] == "failed"
        assert run["errorSummary"] == "Node 'draft' failed: rejected by reviewer after 1 retry: b"
        assert [(n["nodeName"], n["status"], n["error"]) for n in run["nodeRuns"]] == [
            ("draft", "failed", "rejected by reviewer: a"),
            ("draft", "failed", "rejected by reviewer after 1 retry: b"),
        ]

    async def test_rejections_past_max_retries_skip_a_step_whose_on_error_is_skip(
        self, platform: Platform
    ) -> None:
        # The skipped node run said only "skipped by reviewer", losing the feedback.
        review = {**self.REVIEW, "maxRetries": 0}
        draft = {**echo("draft", review), "stepConfig": {"onError": "skip"}}
        wf, run_id = await start(platform, [draft, echo("after")])
        await wait_for_gate(platform, wf, run_id, "draft")
        await approve(platform, wf, run_id, stepId="draft", resolution="reject", feedback="no")
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed", run["errorSummary"]
        assert [(n["nodeName"], n["status"], n["error"]) for n in run["nodeRuns"]] == [
            (
                "draft",
                "skipped",
                "rejected by reviewer after 0 retries: no; skipped (onError: skip)",
            ),
            ("after", "completed", None),
        ]

    async def test_one_retry_spent_skipping_the_step_says_1_retry(self, platform: Platform) -> None:
        # It said "after 1 retries".
        review = {**self.REVIEW, "maxRetries": 1}
        draft = {**echo("draft", review), "stepConfig": {"onError": "skip"}}
        wf, run_id = await start(platform, [draft, echo("after")])
        for retry_count, feedback in ((0, "a"), (1, "b")):
            await wait_for_requirement(platform, wf, run_id, "draft", retryCount=retry_count)
            await approve(
                platform, wf, run_id, stepId="draft", resolution="reject", feedback=feedback
            )
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed", run["errorSummary"]
        assert [(n["nodeName"], n["status"], n["error"]) for n in run["nodeRuns"]] == [
            ("draft", "failed", "rejected by reviewer: a"),
            ("draft", "skipped", "rejected by reviewer after 1 retry: b; skipped (onError: skip)"),
            ("after", "completed", None),
        ]

    async def test_an_output_rejected_with_skip_is_not_kept_on_the_skipped_node(
        self, platform: Platform
    ) -> None:
        # A skipped node outputs nothing; the rejected output stayed on its node run.
        review = {"requiresOutputReview": True, "onReject": "skip"}
        wf, run_id = await start(
            platform,
            [
                echo("draft", review, text="v1"),
                echo("after", None, got="{{ previous_step_content }}"),
            ],
        )
        await wait_for_gate(platform, wf, run_id, "draft")
        await approve(platform, wf, run_id, stepId="draft", resolution="reject")
        run = await platform.wait(wf, run_id)
        draft, after = run["nodeRuns"]
        assert (draft["status"], draft["outputSnapshot"]) == ("skipped", None)
        assert after["outputSnapshot"]["config"] == {"got": None}


class TestCompatibility:
    """The contract's resolution x requirement table, the invalid half."""

    async def test_mismatched_resolutions_are_400(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("plain", {"requiresConfirmation": True})])
        await wait_for_gate(platform, wf, run_id, "plain")
        for body in (
            {"resolution": "edit", "editedOutput": {"x": 1}},
            {"resolution": "user_input", "userInput": {}},
            {"resolution": "route_select", "selectedChoices": ["a"]},
        ):
            response = await approve(platform, wf, run_id, stepId="plain", **body)
            assert response.status_code == 400, body
            assert response.json()["error"]["code"] == "invalid_request"
        bad = await approve(platform, wf, run_id, stepId="plain", resolution="maybe")
        assert bad.status_code == 400

    async def test_unknown_step_is_404_and_a_finished_run_is_409(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [echo("plain", {"requiresConfirmation": True})])
        await wait_for_gate(platform, wf, run_id, "plain")
        unknown = await approve(platform, wf, run_id, stepId="nope", resolution="confirm")
        assert unknown.status_code == 404
        assert (
            await approve(platform, wf, run_id, stepId="plain", resolution="confirm")
        ).status_code == 200
        await platform.wait(wf, run_id)
        again = await approve(platform, wf, run_id, stepId="plain", resolution="confirm")
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "conflict"


class TestRouterCondititionLoop:
    ROUTER = {
        "id": "route",
        "name": "route",
        "nodeType": "router",
        "conditionCel": "input.kind",
        "humanReview": {"requiresUserInput": True},
        "choices": [{"name": "a", "steps": [echo("in-a")]}, {"name": "b", "steps": [echo("in-b")]}],
    }

    async def test_a_person_picks_the_route_with_the_cel_result_suggested(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(platform, [self.ROUTER], {"kind": "a"})
        run = await wait_for_gate(platform, wf, run_id, "route")
        req = run["pendingRequirements"][0]
        assert req["requiresRouteSelection"] is True and req["stepType"] == "router"
        assert req["availableChoices"] == ["a", "b"] and req["suggestedChoices"] == ["a"]
        assert req["allowMultipleSelections"] is False
        two = await approve(
            platform,
            wf,
            run_id,
            stepId="route",
            resolution="route_select",
            selectedChoices=["a", "b"],
        )
        assert two.status_code == 400
        none = await approve(platform, wf, run_id, stepId="route", resolution="route_select")
        assert none.status_code == 400
        ok = await approve(
            platform, wf, run_id, stepId="route", resolution="route_select", selectedChoices=["b"]
        )
        assert ok.status_code == 200
        run = await platform.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-b"]

    async def test_a_person_picks_a_route_by_its_name_in_another_unicode_form(
        self, platform: Platform
    ) -> None:
        # Saved decomposed, typed composed: the router's own selection matched it, a
        # person's was "'café' is not a choice (choices: café, …)" (found by a review).
        decomposed, composed = "cafe\u0301", "caf\u00e9"
        router = {**self.ROUTER, "choices": [
            {"name": decomposed, "steps": [echo("coffee")]},
            {"name": "b", "steps": [echo("in-b")]},
        ]}  # fmt: skip
        wf, run_id = await start(platform, [router], {"kind": "b"})
        await wait_for_gate(platform, wf, run_id, "route")
        ok = await approve(
            platform,
            wf,
            run_id,
            stepId="route",
            resolution="route_select",
            selectedChoices=[composed],
        )
        assert ok.status_code == 200, ok.text
        run = await platform.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "coffee"]

    async def test_confirming_a_route_takes_the_suggestion(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [self.ROUTER], {"kind": "a"})
        await wait_for_gate(platform, wf, run_id, "route")
        await approve(platform, wf, run_id, stepId="route", resolution="confirm")
        run = await platform.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-a"]

    async def test_a_confirm_records_no_choices_it_did_not_take(self, platform: Platform) -> None:
        # The audit trail named the choices a confirm sent (even unknown ones), though
        # the suggestion ran.
        wf, run_id = await start(platform, [self.ROUTER], {"kind": "a"})
        await wait_for_gate(platform, wf, run_id, "route")
        answer = await approve(
            platform, wf, run_id, stepId="route", resolution="confirm", selectedChoices=["q"]
        )
        assert answer.status_code == 200, answer.text
        run = await platform.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-a"]
        decided = run["resolvedRequirements"][0]
        assert (decided["resolution"], decided["selectedChoices"]) == ("confirm", None)

    async def test_confirming_a_route_without_a_valid_suggestion_is_400(
        self, platform: Platform
    ) -> None:
        # It was accepted (200) and then failed the run: "confirmed without a selection".
        wf, run_id = await start(platform, [self.ROUTER], {"kind": "neither"})
        run = await wait_for_gate(platform, wf, run_id, "route")
        assert run["pendingRequirements"][0]["suggestedChoices"] is None
        refused = await approve(platform, wf, run_id, stepId="route", resolution="confirm")
        assert refused.status_code == 400, refused.text
        assert "route_select" in refused.json()["error"]["message"]
        run = await wait_for_gate(platform, wf, run_id, "route")
        assert run["status"] == "awaiting_approval" and run["resolvedRequirements"] == []
        chosen = await approve(
            platform, wf, run_id, stepId="route", resolution="route_select", selectedChoices=["b"]
        )
        assert chosen.status_code == 200
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-b"]

    async def test_confirming_two_suggested_routes_needs_multiple_selections(
        self, platform: Platform
    ) -> None:
        # Confirmed (200), both routes ran, though the gate allows one.
        wf, run_id = await start(platform, [self.ROUTER], {"kind": ["a", "b"]})
        run = await wait_for_gate(platform, wf, run_id, "route")
        assert run["pendingRequirements"][0]["suggestedChoices"] == ["a", "b"]
        refused = await approve(platform, wf, run_id, stepId="route", resolution="confirm")
        assert refused.status_code == 400, refused.text
        assert "allows one route" in refused.json()["error"]["message"]
        run = await wait_for_gate(platform, wf, run_id, "route")
        assert run["status"] == "awaiting_approval" and run["resolvedRequirements"] == []

    async def test_a_rejected_route_output_with_retry_runs_the_route_again(
        self, platform: Platform
    ) -> None:
        # The review was asked again over the very same output: nothing ran again.
        feedback = "has(rejection_feedback) ? rejection_feedback : 'none'"
        reviewed = {
            "id": "route",
            "name": "route",
            "nodeType": "router",
            "conditionCel": "'a'",
            "humanReview": {"requiresOutputReview": True, "onReject": "retry"},
            "choices": [
                {"name": "a", "steps": [transform("in-a", heard=feedback)]},
                {"name": "b", "steps": [echo("in-b")]},
            ],
        }
        after = transform("after", heard=feedback, got="previous_step_content")
        wf, run_id = await start(platform, [reviewed, after])
        run = await wait_for_gate(platform, wf, run_id, "route")
        assert run["pendingRequirements"][0]["stepOutput"] == {"heard": "none"}
        rejected = await approve(
            platform, wf, run_id, stepId="route", resolution="reject", feedback="louder"
        )
        assert rejected.status_code == 200
        run = await wait_for_requirement(platform, wf, run_id, "route", retryCount=1)
        assert run["pendingRequirements"][0]["stepOutput"] == {"heard": "louder"}
        await approve(platform, wf, run_id, stepId="route", resolution="confirm")
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-a", "in-a", "after"]
        # The feedback was the route's: the node after it does not hear it.
        assert run["finalOutput"] == {"heard": "none", "got": {"heard": "louder"}}

    async def test_a_rejected_condition_with_else_branch_runs_the_false_steps(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(
            platform,
            [
                {
                    "id": "cond",
                    "name": "cond",
                    "nodeType": "condition",
                    "conditionCel": "true",
                    "humanReview": {"requiresConfirmation": True, "onReject": "else_branch"},
                    "trueSteps": [echo("yes")],
                    "falseSteps": [echo("no")],
                }
            ],
        )
        await wait_for_gate(platform, wf, run_id, "cond")
        await approve(platform, wf, run_id, stepId="cond", resolution="reject")
        run = await platform.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["cond", "no"]

    async def test_iteration_review_continues_on_confirm_and_ends_on_reject(
        self, platform: Platform
    ) -> None:
        wf, run_id = await start(
            platform,
            [
                {
                    "id": "loop",
                    "name": "loop",
                    "nodeType": "loop",
                    "loopConfig": {"maxIterations": 5},
                    "humanReview": {"requiresIterationReview": True, "onReject": "skip"},
                    "children": [
                        {
                            "id": "tick",
                            "name": "tick",
                            "nodeType": "step",
                            "executorKey": "builtin:transform",
                            "config": {"map": {"i": "iteration"}},
                        }
                    ],
                }
            ],
        )
        run = await wait_for_gate(platform, wf, run_id, "loop")
        assert run["pendingRequirements"][0]["stepOutput"] == {"i": 0}
        await approve(platform, wf, run_id, stepId="loop", resolution="confirm")
        run = await wait_for_gate(platform, wf, run_id, "loop")
        while run["pendingRequirements"][0]["stepOutput"] != {"i": 1}:
            run = await wait_for_gate(platform, wf, run_id, "loop")
        await approve(platform, wf, run_id, stepId="loop", resolution="reject")
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert run["finalOutput"] == [{"i": 0}]

    async def test_a_gate_in_a_map_item_inside_a_loop_says_which_item_and_iteration(
        self, platform: Platform
    ) -> None:
        # Each item (one at a time) and each iteration opened the same gate, and nothing
        # said for which one the approver was deciding (its nodeRunId only).
        gated = echo("check", {"requiresConfirmation": True})
        items = {
            "id": "M",
            "name": "M",
            "nodeType": "map",
            "itemsCel": "['a', 'b']",
            "maxConcurrency": 1,
            "children": [gated],
        }
        looped = {
            "id": "L",
            "name": "L",
            "nodeType": "loop",
            "loopConfig": {"maxIterations": 2},
            "children": [items],
        }
        wf, run_id = await start(platform, [looped])
        seen = []
        for iteration in (0, 1):
            for index in (0, 1):
                run = await wait_for_requirement(
                    platform, wf, run_id, "check", iteration=iteration, itemIndex=index
                )
                (req,) = run["pendingRequirements"]
                seen.append((req["iteration"], req["itemIndex"]))
                await approve(platform, wf, run_id, stepId="check", resolution="confirm")
        assert seen == [(0, 0), (0, 1), (1, 0), (1, 1)]
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed", run
        decided = [(r["iteration"], r["itemIndex"]) for r in run["resolvedRequirements"]]
        assert decided == seen

    async def test_a_loop_ended_at_its_iteration_review_shows_why_and_no_output(
        self, platform: Platform
    ) -> None:
        # Its node run read "cancelled" (a step's names the gate and who), with no input
        # snapshot and the reviewed iteration's object as the loop's output; so did a
        # loop failed there with its retries spent.
        def looped(on_reject: str) -> dict[str, Any]:
            return {
                "id": "loop",
                "name": "loop",
                "nodeType": "loop",
                "loopConfig": {"maxIterations": 3},
                "humanReview": {
                    "requiresIterationReview": True,
                    "onReject": on_reject,
                    "maxRetries": 0,
                },
                "children": [transform("tick", i="iteration")],
            }

        for on_reject, status, error in (
            ("cancel", "cancelled", "Cancelled at 'loop' (rejected by dev)"),
            ("retry", "failed", None),
        ):
            wf, run_id = await start(platform, [looped(on_reject)])
            await wait_for_gate(platform, wf, run_id, "loop")
            await approve(platform, wf, run_id, stepId="loop", resolution="reject")
            run = await platform.wait(wf, run_id)
            assert run["status"] == status, run
            (loop_run,) = [n for n in run["nodeRuns"] if n["nodeName"] == "loop"]
            assert loop_run["status"] == status, loop_run
            if error is not None:
                assert loop_run["error"] == error
            assert loop_run["outputSnapshot"] is None, loop_run
            assert loop_run["inputSnapshot"] == {"maxIterations": 3, "iterations": 0}

    async def test_an_iteration_retried_after_a_rejection_hears_the_feedback(
        self, platform: Platform
    ) -> None:
        # The iteration ran again without `rejection_feedback` in its scope.
        heard = "has(rejection_feedback) ? rejection_feedback : 'none'"
        looped = {
            "id": "loop",
            "name": "loop",
            "nodeType": "loop",
            "loopConfig": {"maxIterations": 2},
            "humanReview": {"requiresIterationReview": True, "onReject": "retry"},
            "children": [transform("tick", i="iteration", heard=heard)],
        }
        wf, run_id = await start(platform, [looped])
        run = await wait_for_gate(platform, wf, run_id, "loop")
        assert run["pendingRequirements"][0]["stepOutput"] == {"i": 0, "heard": "none"}
        await approve(platform, wf, run_id, stepId="loop", resolution="reject", feedback="more")
        run = await wait_for_requirement(platform, wf, run_id, "loop", retryCount=1)
        assert run["pendingRequirements"][0]["stepOutput"] == {"i": 0, "heard": "more"}
        await approve(platform, wf, run_id, stepId="loop", resolution="confirm")
        run = await wait_for_requirement(platform, wf, run_id, "loop", iteration=1)
        # Only the retried iteration hears it.
        assert run["pendingRequirements"][0]["stepOutput"] == {"i": 1, "heard": "none"}
        await approve(platform, wf, run_id, stepId="loop", resolution="confirm")
        run = await platform.wait(wf, run_id)
        assert run["finalOutput"] == [{"i": 0, "heard": "more"}, {"i": 1, "heard": "none"}]
