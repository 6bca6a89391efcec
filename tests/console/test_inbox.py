"""The approvals inbox in a real browser: forms generated from requirements, decisions sent."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console
from tests.console.definitions import confirm_gate, form_gate, review_gate, route_gate
from tests.hitl.helpers import approve, control, wait_for_gate

LIVE = 15_000  # ms: how long a live change may take to show


def approve_requests(page: Any) -> list[str]:
    """URLs of the decisions the page sends (to tell client-side checks from the server's)."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/approve") else None)
    return sent


class TestUserInputForm:
    async def test_deciding_a_form_in_the_inbox_shows_the_run_reach_completed_live(
        self, console: Console
    ) -> None:
        p = console.platform
        wf = await p.create({"name": "Pay a supplier invoice", "nodes": form_gate()})
        run_id = await p.trigger(wf)
        await wait_for_gate(p, wf, run_id, "collect")
        run_tab = await console.new_tab()
        await console.goto(f"/console/workflows/{wf}/runs/{run_id}", run_tab)
        await expect(run_tab.locator("[data-role=run-status] .badge")).to_have_text(
            "awaiting approval"
        )
        await run_tab.evaluate("window.sameDocument = true")
        sent = approve_requests(console.page)

        await console.goto("/console/approvals")  # in front; the run tab follows in the back
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await expect(card.get_by_role("heading", name="collect")).to_be_visible()
        await expect(card).to_contain_text("Enter the payment to make")
        await expect(card).to_contain_text("then run cancelled")
        # A description without a full stop gets one before the field's hint.
        await expect(card).to_contain_text("How much to pay, in the currency. A number.")
        await console.shoot("inbox")
        await console.check_accessible()

        await card.get_by_role("button", name="Submit").click()
        await expect(card.get_by_text("amount is required")).to_be_visible()
        await expect(card.get_by_text("currency is required")).to_be_visible()
        await expect(card.get_by_label("amount")).to_be_focused()
        await card.get_by_label("amount").fill("twelve")
        await card.get_by_role("button", name="Submit").click()
        await expect(card.get_by_text("amount must be a number")).to_be_visible()
        assert sent == [], "client-side checks must stop the form before the server"
        await console.shoot("inbox-form-errors")

        await card.get_by_label("amount").fill("12.5")
        await card.get_by_label("currency").select_option(label="EUR")
        await card.get_by_label("Yes").check()
        await card.get_by_role("button", name="Submit").click()
        result = card.get_by_role("status")
        await expect(result).to_contain_text("Submitted: collect")
        await expect(result).to_contain_text("The run is now")
        await expect(card.locator(".result-title")).to_be_focused()
        assert len(sent) == 1
        # The decided card's age and countdown no longer tick.
        await expect(card.locator("[data-since], [data-deadline]")).to_have_count(0)

        status = run_tab.locator("[data-role=run-status] .badge")
        await expect(status).to_have_text("completed", timeout=LIVE)
        pay = run_tab.locator('button.node[data-node-id="pay"] .badge')
        await expect(pay).to_have_text("completed", timeout=LIVE)
        assert await run_tab.evaluate("window.sameDocument") is True, "the run page reloaded"
        run = await p.wait(wf, run_id)
        decided = run["resolvedRequirements"][0]
        assert decided["resolution"] == "user_input"
        assert decided["userInput"] == {"amount": 12.5, "currency": "EUR", "urgent": True}
        await run_tab.locator('button.node[data-node-id="collect"]').click()
        await expect(run_tab.locator(".node-run")).to_have_count(1)
        await console.shoot("run-completed", run_tab)
        await console.check_accessible(run_tab)

    async def test_the_servers_400_is_shown_inline_and_the_gate_stays_open(
        self, console: Console
    ) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(form_gate(), "collect")
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await card.get_by_label("amount").fill("3")
        await card.get_by_label("currency").select_option(label="USD")

        # The form's checks pass; on the way the value becomes one the schema does not allow
        # (as from an outdated page or a hand-edited request). Only the server can refuse it,
        # and its answer must appear where the user is looking.
        async def outdated(route: Any) -> None:
            body = json.loads(route.request.post_data)
            body["userInput"]["currency"] = "GBP"
            await route.continue_(post_data=json.dumps(body))

        await console.page.route("**/approve", outdated)
        await card.get_by_role("button", name="Submit").click()
        alert = card.get_by_role("alert")
        await expect(alert).to_contain_text("The server refused this decision")
        await expect(alert).to_contain_text("userInput.currency must be one of")
        field_error = card.locator('[data-field="currency"] .field-error')
        await expect(field_error).to_contain_text("must be one of")
        await expect(card.get_by_label("currency")).to_have_attribute("aria-invalid", "true")
        await expect(card.get_by_label("currency")).to_be_focused()
        await console.shoot("inbox-server-400")

        # Two fields refused: each problem under its own field (both went under the first).
        async def two_outdated(route: Any) -> None:
            body = json.loads(route.request.post_data)
            body["userInput"].update(amount="twelve", currency="GBP")
            await route.continue_(post_data=json.dumps(body))

        await console.page.unroute("**/approve")
        await console.page.route("**/approve", two_outdated)
        await card.get_by_role("button", name="Submit").click()
        amount_error = card.locator('[data-field="amount"] .field-error')
        await expect(amount_error).to_have_text("amount must be a number")
        await expect(field_error).to_contain_text("currency must be one of")
        await expect(field_error).not_to_contain_text("amount")
        await expect(card.get_by_label("amount")).to_have_attribute("aria-invalid", "true")
        await expect(card.get_by_label("currency")).to_have_attribute("aria-invalid", "true")
        await expect(card.get_by_label("amount")).to_be_focused()
        run = await wait_for_gate(p, wf, run_id, "collect")
        assert run["status"] == "awaiting_approval" and run["resolvedRequirements"] == []


class TestConfirmAndReject:
    async def test_rejecting_with_feedback_records_it_and_the_step_is_skipped(
        self, console: Console
    ) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(confirm_gate("Ship order 42?"), "ship")
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await expect(card).to_contain_text("Ship order 42?")
        await card.get_by_label("Feedback").fill("Address is incomplete")
        await card.get_by_role("button", name="Reject").click()
        await expect(card.get_by_role("status")).to_contain_text("Rejected: ship")
        run = await p.wait(wf, run_id)
        assert run["status"] == "completed"
        decided = run["resolvedRequirements"][0]
        assert (decided["resolution"], decided["rejectionFeedback"]) == (
            "reject",
            "Address is incomplete",
        )
        assert {n["nodeName"]: n["status"] for n in run["nodeRuns"]}["ship"] == "skipped"

    async def test_a_gate_can_be_approved_with_the_keyboard_alone(self, console: Console) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(confirm_gate(), "ship")
        await console.goto("/console/approvals")
        page = console.page
        # Focus order: skip link, brand, navigation, Refresh, the card's links, Approve.
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
        approve = page.locator(f'article[data-run-id="{run_id}"]').get_by_role(
            "button", name="Approve"
        )
        for _ in range(12):
            await page.keyboard.press("Tab")
            if await approve.evaluate("el => el === document.activeElement"):
                break
        await expect(approve).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator(f'article[data-run-id="{run_id}"] .result-title')).to_be_focused()
        run = await p.wait(wf, run_id)
        assert [r["resolution"] for r in run["resolvedRequirements"]] == ["confirm"]
        assert run["status"] == "completed"


class TestRouteSelection:
    async def test_the_suggested_route_is_preselected_and_another_can_be_taken(
        self, console: Console
    ) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(route_gate(), "route", {"kind": "express"})
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        express = card.get_by_role("radio", name="express (suggested)")
        await expect(express).to_be_checked()
        await expect(card.get_by_role("checkbox")).to_have_count(0)
        await console.shoot("inbox-route")
        await card.get_by_role("radio", name="standard").check()
        await card.get_by_role("button", name="Take selected route").click()
        await expect(card.get_by_role("status")).to_contain_text("Route chosen: route")
        run = await p.wait(wf, run_id)
        assert run["resolvedRequirements"][0]["selectedChoices"] == ["standard"]
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-standard"]

    async def test_a_router_allowing_several_routes_offers_checkboxes(
        self, console: Console
    ) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(route_gate(multiple=True), "route", {"kind": "standard"})
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await expect(card.get_by_role("checkbox", name="standard (suggested)")).to_be_checked()
        await card.get_by_role("checkbox", name="standard (suggested)").uncheck()
        await card.get_by_role("button", name="Take selected routes").click()
        await expect(card.get_by_role("group")).to_contain_text("Choose a route first.")
        await card.get_by_role("checkbox", name="express").check()
        await card.get_by_role("checkbox", name="standard (suggested)").check()
        await card.get_by_role("button", name="Take selected routes").click()
        await expect(card.get_by_role("status")).to_contain_text("Route chosen")
        run = await p.wait(wf, run_id)
        assert sorted(run["resolvedRequirements"][0]["selectedChoices"]) == ["express", "standard"]
        assert sorted(n["nodeName"] for n in run["nodeRuns"]) == [
            "in-express",
            "in-standard",
            "route",
        ]

    async def test_a_tie_of_suggested_routes_on_a_one_route_gate_preselects_none(
        self, console: Console
    ) -> None:
        # The suggestion names both routes but the gate takes one: picking one of them for
        # the approver (the last radio button checked wins) would hide the tie.
        p = console.platform
        wf, run_id = await console.at_gate(route_gate(), "route", {"kind": ["express", "standard"]})
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await expect(card.get_by_role("radio", name="express (suggested)")).not_to_be_checked()
        await expect(card.get_by_role("radio", name="standard (suggested)")).not_to_be_checked()
        tie = "The suggestion names 2 routes; this gate takes one. Choose it."
        await expect(
            card.get_by_role("group", name="Route to take")
        ).to_have_accessible_description(tie)
        sent = approve_requests(console.page)
        await card.get_by_role("button", name="Take selected route").click()
        # Said under the routes, which are marked, and the focus is on the first of them.
        routes = card.get_by_role("group", name="Route to take")
        await expect(routes).to_have_attribute("aria-invalid", "true")
        await expect(routes).to_have_accessible_description(f"{tie} Choose a route first.")
        await expect(routes.locator(".field-error")).to_have_text("Choose a route first.")
        await expect(card.get_by_role("radio", name="express (suggested)")).to_be_focused()
        await expect(card.get_by_role("alert")).to_contain_text("Fix the field marked above.")
        assert sent == []
        await card.get_by_role("radio", name="express (suggested)").check()
        await card.get_by_role("button", name="Take selected route").click()
        await expect(card.get_by_role("status")).to_contain_text("Route chosen: route")
        run = await p.wait(wf, run_id)
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["route", "in-express"]


class TestOutputReview:
    async def test_an_edited_output_replaces_the_steps_output_downstream(
        self, console: Console
    ) -> None:
        p = console.platform
        wf, run_id = await console.at_gate(review_gate(), "draft")
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        editor = card.get_by_label("Step output (JSON)")
        await expect(editor).to_have_value(re.compile(r'"text": "first draft"'))
        await editor.fill('{"text": "final')
        await card.get_by_role("button", name="Approve edited output").click()
        await expect(card.get_by_role("alert")).to_contain_text("not valid JSON")
        await expect(editor).to_have_attribute("aria-invalid", "true")
        await editor.fill('{"text": "final copy"}')
        await console.shoot("inbox-output-review")
        await card.get_by_role("button", name="Approve edited output").click()
        await expect(card.get_by_role("status")).to_contain_text("Approved with edits: draft")
        run = await p.wait(wf, run_id)
        assert run["resolvedRequirements"][0]["editedOutput"] == {"text": "final copy"}
        assert run["finalOutput"]["config"] == {"text": "final copy"}


async def test_the_inbox_picks_up_new_gates_and_says_when_nothing_waits(console: Console) -> None:
    await console.goto("/console/approvals")
    await expect(console.page.locator(".summary")).to_have_text("Nothing is waiting for you.")
    await console.shoot("inbox-empty")
    _wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.page.get_by_role("button", name="Refresh").click()
    await expect(console.page.locator(f'article[data-run-id="{run_id}"]')).to_be_visible()


async def test_a_refresh_clicked_while_the_inbox_loads_asks_again_after(
    console: Console,
) -> None:
    # It was ignored: the load in flight, answered before the gate came, was all it showed,
    # until the next refresh 10 s later.
    page = console.page
    await page.clock.install()
    await console.goto("/console/approvals")
    await expect(page.locator(".summary")).to_have_text("Nothing is waiting for you.")
    await page.clock.pause_at(await page.evaluate("Date.now()") + 1_000)  # no timed refresh
    answered, release = asyncio.Event(), asyncio.Event()
    held: list[str] = []

    async def hold_the_first(route: Any) -> None:
        if held:
            await route.continue_()
            return
        held.append(route.request.url)
        response = await route.fetch()  # answered now, before the gate
        answered.set()
        await release.wait()
        await route.fulfill(response=response)

    await page.route("**/api/v1/approvals*", hold_the_first)
    refresh = page.get_by_role("button", name="Refresh")
    await refresh.click()
    await answered.wait()
    _wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await refresh.click()
    release.set()
    await expect(page.locator(f'article[data-run-id="{run_id}"]')).to_be_visible()
    await expect(page.locator(".summary")).to_have_text("1 gate waiting. (refreshed)")


async def test_the_count_of_gates_waiting_drops_as_soon_as_a_decision_is_taken(
    console: Console,
) -> None:
    # It said "2 gates waiting." until the next refresh, 10 s later.
    _wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await page.clock.install()
    await console.goto("/console/approvals")
    await expect(page.locator(".summary")).to_have_text("2 gates waiting.")
    await page.clock.pause_at(await page.evaluate("Date.now()") + 1_000)  # no timed refresh
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_role("button", name="Approve").click()
    await expect(page.locator(".summary")).to_have_text("1 gate waiting.")
    outcome = card.get_by_role("status")
    await expect(outcome).to_contain_text("Approved: ship")  # kept by that load
    await expect(outcome.locator(".result-title")).to_be_focused()
    await expect(page.locator("article.gate")).to_have_count(2)


async def test_a_cards_run_paused_mark_follows_its_run_being_paused_and_resumed(
    console: Console,
) -> None:
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    paused = card.locator(".gate-head").get_by_text("run paused")
    refresh = console.page.get_by_role("button", name="Refresh")
    await expect(card).to_be_visible()
    await expect(paused).to_have_count(0)
    assert (await control(p, wf, run_id, "pause")).status_code == 200
    await p.wait(wf, run_id, {"paused"})
    await refresh.click()
    await expect(paused).to_be_visible()
    assert (await control(p, wf, run_id, "resume")).status_code == 200
    await p.wait(wf, run_id, {"awaiting_approval"})
    await refresh.click()
    await expect(paused).to_have_count(0)


async def test_a_card_being_typed_in_says_when_its_gate_closes_elsewhere(
    console: Console,
) -> None:
    # Kept for the focus, it still looked open ("Nothing is waiting for you." above it),
    # and only a submit said otherwise.
    p = console.platform
    wf, run_id = await console.at_gate(form_gate(), "collect")
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_label("amount").fill("5")
    await expect(card.get_by_label("amount")).to_be_focused()
    decided = await p.api.post(
        f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "collect", "resolution": "reject"},
    )
    assert decided.status_code == 200, decided.text
    closed = card.locator("[data-role=gate-closed]")
    await expect(closed).to_contain_text("This gate has closed", timeout=LIVE)
    await expect(card.get_by_label("amount")).to_have_value("5")  # what was typed stays


async def test_a_card_typed_in_says_its_gate_closed_after_the_focus_left_it(
    console: Console,
) -> None:
    # Kept only while it held the focus: tabbed on to the next card, it went at the next
    # refresh with what was typed, without a word.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await page.clock.install()
    await console.goto("/console/approvals")
    await expect(page.locator(".summary")).to_have_text("2 gates waiting.")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    feedback = card.get_by_label(re.compile("feedback", re.IGNORECASE))
    await feedback.fill("Not this one")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await expect(page.locator("article.gate").nth(1).get_by_role("link").first).to_be_focused()
    decided = await approve(p, wf, run_id, stepId="ship", resolution="confirm")
    assert decided.status_code == 200, decided.text
    await page.clock.run_for(10_500)  # the inbox's refresh
    await expect(page.locator(".summary")).to_have_text("1 gate waiting.")
    await expect(card.locator("[data-role=gate-closed]")).to_contain_text("This gate has closed")
    await expect(feedback).to_have_value("Not this one")


async def test_a_card_being_typed_in_stops_acting_live_when_its_run_is_cancelled(
    console: Console,
) -> None:
    # It said the gate was "decided elsewhere or by its timeout", its age kept counting and
    # its buttons sent decisions the API refused.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    feedback = card.get_by_label(re.compile("feedback", re.IGNORECASE))
    await feedback.fill("typing...")
    await expect(feedback).to_be_focused()
    assert (await control(p, wf, run_id, "cancel")).status_code == 200
    closed = card.locator("[data-role=gate-closed]")
    await expect(closed).to_contain_text("its run ended (cancelled or failed)", timeout=LIVE)
    await expect(card.locator("[data-since], [data-deadline]")).to_have_count(0)
    for button in await card.locator("form button").all():
        await expect(button).to_be_disabled()
    await expect(feedback).to_have_value("typing...")
    await closed.get_by_role("button", name="Dismiss").click()
    await expect(card).to_have_count(0)
    # As an outcome's Dismiss: the focus to the heading (it fell to <body>).
    await expect(console.page.get_by_role("heading", name="Approvals")).to_be_focused()


async def test_a_page_of_the_inbox_past_the_last_says_so_and_leads_to_the_last(
    console: Console,
) -> None:
    # Deciding gates leaves fewer pages: it said "Page 41 of 40" and showed no gate.
    p = console.platform
    wf = await p.create({"name": "Past the last page", "nodes": confirm_gate()})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    page = console.page
    await console.goto("/console/approvals?page=999")
    await expect(page.locator("p.summary")).to_contain_text("Page 999 is past the last")
    await page.get_by_role("link", name=re.compile(r"Go to the last page")).click()
    await expect(page.locator(f"[data-run-id='{run_id}']")).to_have_count(1)


async def test_a_required_text_field_of_spaces_is_sent_as_the_server_takes_it(
    console: Console,
) -> None:
    # The browser refused "   " as missing while the API takes it (the checks mirror it).
    p = console.platform
    form = {"requiresUserInput": True, "userInputSchema": [{"name": "reason"}]}
    wf, run_id = await console.at_gate([echo("ask", form)], "ask")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_role("button", name="Submit").click()
    await expect(card.get_by_text("reason is required")).to_be_visible()  # empty: no answer
    await card.get_by_label("reason").fill("   ")
    await card.get_by_role("button", name="Submit").click()
    await expect(card.get_by_role("status")).to_contain_text("Submitted: ask")
    run = await p.wait(wf, run_id)
    assert run["resolvedRequirements"][0]["userInput"] == {"reason": "   "}


async def test_a_card_whose_decision_was_refused_does_not_say_nothing_was_sent(
    console: Console,
) -> None:
    # After the 409, the next refresh said "Nothing you entered here was sent".
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    await expect(card).to_be_visible()
    decided = await approve(p, wf, run_id, stepId="ship", resolution="reject")
    assert decided.status_code == 200, decided.text
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("alert")).to_contain_text("Already decided, or the run moved on")
    await expect(card.get_by_role("button", name="Approve")).to_be_focused()
    closed = card.locator("[data-role=gate-closed]")  # at the inbox's next refresh
    await expect(closed).to_contain_text("Your decision was sent and refused", timeout=LIVE)
    await expect(closed).not_to_contain_text("Nothing you entered here was sent")


async def test_a_gate_past_its_timeout_stops_counting_its_wait(console: Console) -> None:
    # Its countdown said "expired (then approved)" while "Waiting" went on counting up
    # until the next refresh took the card away.
    review = {"requiresConfirmation": True, "timeoutSeconds": 2, "onTimeout": "approve"}
    _wf, run_id = await console.at_gate([echo("ship", review), echo("after")], "ship")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    await expect(card.locator("[data-deadline]")).to_contain_text("expired (then approved)")
    waited = await card.locator("[data-since]").inner_text()
    await console.page.wait_for_timeout(2500)
    await expect(card.locator("[data-since]")).to_have_text(waited)
    assert waited in ("1 s", "2 s", "3 s"), waited
