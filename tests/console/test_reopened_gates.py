"""Gates that open again on the same step, and decisions whose answer comes back late."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from playwright.async_api import expect

from tests.builders import echo, loop
from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.hitl.helpers import approve
from tests.support.platform import Platform

LIVE = 15_000  # ms


async def gate_opened(
    p: Platform, wf: str, run_id: str, field: str, value: int, within: float = 15.0
) -> dict[str, Any]:
    """Poll until the run's open gate has `field` == `value` (the gate opened again)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        run: dict[str, Any] = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
        if any(r.get(field) == value for r in run["pendingRequirements"]):
            return run
        assert asyncio.get_running_loop().time() < deadline, f"no gate with {field}={value}: {run}"
        await asyncio.sleep(0.05)


def reviewed_loop() -> list[dict[str, Any]]:
    """A loop whose every iteration waits for "Continue loop" (the gate's step is the loop)."""
    review = {"requiresIterationReview": True, "iterationReviewMessage": "Another round?"}
    return [loop("lp", echo("body"), max_iterations=3, id="lp", humanReview=review)]


async def test_a_loops_next_iteration_review_gets_a_new_form_on_the_run_page(
    console: Console,
) -> None:
    # Every iteration's gate has the same step id: the page must not take the next one for
    # the gate it has just decided.
    p = console.platform
    wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    gates = page.locator("section[aria-labelledby=gates-h]")
    await gates.get_by_role("button", name="Continue loop").click()
    await expect(gates.get_by_role("status")).to_contain_text("Approved: lp")
    # The second iteration's gate: a form again, beside what was decided.
    await expect(gates.get_by_role("button", name="Continue loop")).to_have_count(1, timeout=LIVE)
    await gates.get_by_role("button", name="Continue loop").click()
    await expect(gates.get_by_role("status")).to_have_count(2)
    run = await gate_opened(p, wf, run_id, "iteration", 2)
    assert len(run["resolvedRequirements"]) == 2


async def test_a_review_typed_in_says_it_closed_when_the_focus_went_to_the_tree(
    console: Console,
) -> None:
    # The next iteration's empty card took its place without a word: it was kept only
    # while it held the focus, which had gone to the node runs.
    p = console.platform
    wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    gates = page.locator("section[aria-labelledby=gates-h]")
    first = gates.locator("article.gate").first
    await first.get_by_label(re.compile("feedback", re.IGNORECASE)).fill("Enough rounds")
    await page.locator('button.node[data-node-id="body"]').click()
    await expect(page.locator("main h2:focus")).not_to_have_text("Waiting for a decision")
    assert not await first.evaluate("(card) => card.contains(document.activeElement)")
    decided = await approve(p, wf, run_id, stepId="lp", resolution="confirm")
    assert decided.status_code == 200, decided.text
    await expect(gates.locator("[data-role=iteration]")).to_have_text(["0", "1"], timeout=LIVE)
    await expect(first.locator("[data-role=gate-closed]")).to_contain_text("This gate has closed")
    await expect(first.get_by_label(re.compile("feedback", re.IGNORECASE))).to_have_value(
        "Enough rounds"
    )
    await first.get_by_role("button", name="Dismiss").click()
    await expect(gates.locator("article.gate")).to_have_count(1)  # iteration 1's
    await expect(page.get_by_role("heading", level=1)).to_be_focused()  # not <body>


async def test_a_loops_next_iteration_review_comes_below_the_decided_one_in_the_inbox(
    console: Console,
) -> None:
    # Oldest first: the new gate is younger than the outcome kept on screen, so it goes
    # after it, not at the top.
    p = console.platform
    wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    await console.goto("/console/approvals")
    cards = page.locator(f'article[data-run-id="{run_id}"]')
    await cards.get_by_role("button", name="Continue loop").click()
    await expect(cards.get_by_role("status")).to_contain_text("Approved: lp")
    await gate_opened(p, wf, run_id, "iteration", 1)
    await page.get_by_role("button", name="Refresh").click()
    await expect(cards).to_have_count(2)
    await expect(cards.nth(0).get_by_role("status")).to_contain_text("Approved: lp")
    await expect(cards.nth(1).get_by_role("button", name="Continue loop")).to_have_count(1)
    await expect(cards.nth(1).locator("[data-role=iteration]")).to_have_text("1")


async def test_a_stale_iteration_card_does_not_decide_the_next_iteration(
    console: Console,
) -> None:
    # Pressed after someone else continued iteration 0, the card drawn for it continued
    # iteration 1, which nobody had seen (found by an audit): it is refused now.
    p = console.platform
    wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    await page.clock.install()
    await console.goto("/console/approvals")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await expect(card.locator("[data-role=iteration]")).to_have_text("0")
    await page.clock.pause_at(await page.evaluate("Date.now()") + 1_000)  # no refresh
    url = f"/api/v1/workflows/{wf}/runs/{run_id}/approve"
    elsewhere = await p.api.post(url, json={"stepId": "lp", "resolution": "confirm"})
    assert elsewhere.status_code == 200, elsewhere.text
    await gate_opened(p, wf, run_id, "iteration", 1)

    await card.get_by_role("button", name="Continue loop").click()
    alert = card.get_by_role("alert")
    await expect(alert.locator("[data-status]")).to_have_attribute("data-status", "409")
    # Sent under its key, as every decision of the console: the workflow refuses it.
    await expect(alert).to_contain_text("Requirement 'lp' was already decided")
    run = await gate_opened(p, wf, run_id, "iteration", 1)
    assert len(run["resolvedRequirements"]) == 1


async def test_a_review_reopened_after_a_rejection_gets_a_new_form_in_the_inbox(
    console: Console,
) -> None:
    p = console.platform
    review = {"requiresOutputReview": True, "outputReviewMessage": "Good?", "onReject": "retry"}
    wf, run_id = await console.at_gate([echo("check", review, v=1)], "check")
    page = console.page
    await console.goto("/console/approvals")
    cards = page.locator(f'article[data-run-id="{run_id}"]')
    await cards.get_by_label("Feedback").fill("Once more")
    await cards.get_by_role("button", name="Reject").click()
    await expect(cards.get_by_role("status")).to_contain_text("Rejected: check")
    await gate_opened(p, wf, run_id, "retryCount", 1)
    await page.get_by_role("button", name="Refresh").click()
    await expect(cards).to_have_count(2)
    await expect(cards.get_by_role("button", name="Approve as is")).to_have_count(1)
    await cards.get_by_role("button", name="Approve as is").click()
    assert (await p.wait(wf, run_id))["status"] == "completed"


async def test_the_outcome_stays_when_the_run_ends_before_the_answer_arrives(
    console: Console,
) -> None:
    # The decision's answer comes back late (a slow network); meanwhile the run's events say
    # the gate closed and the run completed. The card must still say what happened.
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page

    async def late(route: Any) -> None:
        response = await route.fetch()
        await asyncio.sleep(1.5)
        await route.fulfill(response=response)

    await page.route("**/approve", late)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    status = page.locator("[data-role=run-status] .badge")
    await page.get_by_role("button", name="Approve").click()
    await expect(status).to_have_text("completed", timeout=LIVE)
    result = page.locator("section[aria-labelledby=gates-h]").get_by_role("status")
    await expect(result).to_contain_text("Approved: ship")
    await expect(result.locator(".result-title")).to_be_focused()


async def test_a_decided_card_keeps_its_outcome_through_refreshes_until_dismissed(
    console: Console,
) -> None:
    # Its gate is no longer pending once decided: a refresh must not take the outcome away.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await console.goto("/console/approvals")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved: ship")
    await p.wait(wf, run_id)
    await page.locator("h1").focus()  # the focus no longer holds the card
    async with page.expect_response(lambda r: "/api/v1/approvals" in r.url, timeout=LIVE):
        pass  # the periodic refresh, every 10 s
    await page.get_by_role("button", name="Refresh").click()
    await expect(page.locator(".summary")).to_contain_text("Nothing is waiting for you.")
    await expect(card.get_by_role("status")).to_contain_text("Approved: ship")

    await card.get_by_role("button", name="Dismiss").click()
    await expect(card).to_have_count(0)
    await expect(page.get_by_role("heading", name="Approvals")).to_be_focused()


async def test_dismissing_the_last_outcome_of_a_finished_run_leaves_no_waiting_heading(
    console: Console,
) -> None:
    # The run page stops refreshing once its run is finished: the Dismiss itself must take
    # "Waiting for a decision" away when nothing waits any more.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    gates = page.locator("section[aria-labelledby=gates-h]")
    await gates.get_by_role("button", name="Approve").click()
    await expect(gates.get_by_role("status")).to_contain_text("Approved: ship")
    await p.wait(wf, run_id)
    await expect(page.locator("dl.facts").first).to_contain_text("Finished")
    await page.wait_for_timeout(1000)  # the page's last refreshes are done; as a person would
    await gates.get_by_role("button", name="Dismiss").click()
    await expect(page.get_by_role("heading", name="Waiting for a decision")).to_have_count(0)
    await expect(page.get_by_role("heading", level=1)).to_be_focused()
