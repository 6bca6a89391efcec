"""A sign-in that runs out while a form is filled in (`jwt` mode): what was typed comes back."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.async_api import expect

from tests.console.console import Console
from tests.console.definitions import form_gate, review_gate, route_gate
from tests.console.test_sign_in import READ_AND_CONTROL, sign_in
from tests.hitl.helpers import start, wait_for_gate
from tests.support.identity import token

GIVEN_BACK = "What you typed is back"


def keys_of(page: Any, suffix: str) -> list[str | None]:
    """The Idempotency-Key of every POST the tab sends to a URL ending with `suffix`."""
    keys: list[str | None] = []

    def note(request: Any) -> None:
        if request.method == "POST" and request.url.endswith(suffix):
            keys.append(request.headers.get("idempotency-key"))

    page.on("request", note)
    return keys


async def sign_in_again(console: Console) -> None:
    """Signing in has run out (the token expired); what the page sends next answers 401."""
    expired = token("alice", READ_AND_CONTROL, expires_in=-120)
    await console.page.evaluate("t => sessionStorage.setItem('trellis.console.token', t)", expired)


async def signed_in_again(console: Console) -> None:
    page = console.page
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("did not accept the current token")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await console.drawn()


async def test_a_decision_form_comes_back_filled_in_after_signing_in_again(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform
    wf = await p.create({"nodes": form_gate()})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "collect")
    page = console.page
    keys = keys_of(page, "/approve")
    await console.goto("/console/sign-in")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_label("amount").fill("12.5")
    await card.get_by_label("currency").select_option(label="USD")
    await card.get_by_label("Yes").check()
    await card.get_by_label("note").fill("pay today")
    await card.get_by_label("Feedback").fill("second thoughts")

    # The inbox's refresh meets the expired token first: nothing was sent.
    await sign_in_again(console)
    await page.get_by_role("button", name="Refresh").click()
    await signed_in_again(console)
    await expect(card).to_contain_text(GIVEN_BACK)
    await expect(card.get_by_label("amount")).to_have_value("12.5")
    await expect(card.get_by_label("currency")).to_have_value('"USD"')
    await expect(card.get_by_label("Yes")).to_be_checked()
    await expect(card.get_by_label("note")).to_have_value("pay today")
    await expect(card.get_by_label("Feedback")).to_have_value("second thoughts")

    # The decision itself meets it: refused, given back, not sent again unasked.
    await sign_in_again(console)
    await card.get_by_role("button", name="Submit").click()
    await signed_in_again(console)
    await expect(card.get_by_label("amount")).to_have_value("12.5")
    await expect(card.get_by_label("note")).to_have_value("pay today")
    await expect(card).to_contain_text(GIVEN_BACK)
    assert len(keys) == 1, keys
    await card.get_by_role("button", name="Submit").click()
    await expect(card.get_by_role("status")).to_contain_text("Submitted: collect")
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1], keys
    run = await p.wait(wf, run_id)
    decided = run["resolvedRequirements"][0]
    assert decided["userInput"] == {
        "amount": 12.5,
        "currency": "USD",
        "urgent": True,
        "note": "pay today",
    }
    assert decided["decidedBy"] == "alice"


async def test_a_trigger_input_comes_back_after_signing_in_again(jwt_console: Console) -> None:
    console = jwt_console
    p = console.platform
    wf = await p.create({"nodes": form_gate()})
    page = console.page
    keys = keys_of(page, f"/workflows/{wf}/runs")
    await console.goto("/console/sign-in")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await console.goto(f"/console/workflows/{wf}")
    given = json.dumps({"invoice": "INV-7"})
    await page.get_by_label("Initial input (JSON object)").fill(given)

    await sign_in_again(console)
    await page.get_by_role("button", name="Trigger run").click()
    await signed_in_again(console)
    await expect(page.get_by_label("Initial input (JSON object)")).to_have_value(given)
    await expect(page.locator("section[aria-labelledby=trigger-h]")).to_contain_text(GIVEN_BACK)
    assert len(keys) == 1, keys
    await page.get_by_role("button", name="Trigger run").click()
    # The page that was drawn is still there until the trigger's answer comes back.
    await expect(page).to_have_url(re.compile(r"/runs/run-"))
    await console.drawn()
    await expect(page.get_by_role("heading", name="Sign in")).to_have_count(0)
    runs = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
    assert [r["id"] for r in runs] == [page.url.rsplit("/", 1)[1]], runs
    run = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{runs[0]['id']}")).json()
    assert run["initialInput"] == {"invoice": "INV-7"}
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1], keys


async def test_an_edited_output_and_a_chosen_route_come_back_after_signing_in_again(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform
    review_wf, review_run = await start(p, review_gate())
    route_wf, route_run = await start(p, route_gate(), {"kind": "express"})
    await wait_for_gate(p, review_wf, review_run, "draft")
    await wait_for_gate(p, route_wf, route_run, "route")
    page = console.page
    await console.goto("/console/sign-in")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    review = page.locator(f'article[data-run-id="{review_run}"]')
    route = page.locator(f'article[data-run-id="{route_run}"]')
    edited = '{"text": "final copy"}'
    await review.get_by_label("Step output (JSON)").fill(edited)
    await route.get_by_role("radio", name="standard").check()

    await sign_in_again(console)
    await page.get_by_role("button", name="Refresh").click()
    await signed_in_again(console)
    await expect(review.get_by_label("Step output (JSON)")).to_have_value(edited)
    await expect(route.get_by_role("radio", name="standard")).to_be_checked()
    await expect(route.get_by_role("radio", name="express (suggested)")).not_to_be_checked()
    await review.get_by_role("button", name="Approve edited output").click()
    await route.get_by_role("button", name="Take selected route").click()
    await expect(route.get_by_role("status")).to_contain_text("Route chosen: route")
    await expect(review.get_by_role("status")).to_contain_text("Approved with edits: draft")
    reviewed = await p.wait(review_wf, review_run)
    assert reviewed["resolvedRequirements"][0]["editedOutput"] == {"text": "final copy"}
    routed = await p.wait(route_wf, route_run)
    assert routed["resolvedRequirements"][0]["selectedChoices"] == ["standard"]
