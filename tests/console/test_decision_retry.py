"""A decision whose answer was lost, sent again from the same form (docs/hitl.md)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.console.console import Console, first_answer_lost
from tests.console.test_reopened_gates import gate_opened, reviewed_loop


async def test_sending_a_decision_again_after_its_answer_was_lost_decides_nothing_more(
    console: Console,
) -> None:
    # Every iteration review of a loop has the same step id: a repeat without the decision's
    # Idempotency-Key would decide the next iteration, which nobody has looked at yet.
    p = console.platform
    wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    keys: list[str | None] = []

    await page.route("**/approve", first_answer_lost(keys))
    await console.goto("/console/approvals")
    card = page.locator(f'article[data-run-id="{run_id}"]').first
    await card.get_by_role("button", name="Continue loop").click()
    await expect(card.get_by_role("alert")).to_contain_text("could not be reached")
    await gate_opened(p, wf, run_id, "iteration", 1)  # the next review is open

    await card.get_by_role("button", name="Continue loop").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved: lp")
    run = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert len(run["resolvedRequirements"]) == 1, run["resolvedRequirements"]
    assert [r["iteration"] for r in run["pendingRequirements"]] == [1]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1], keys


async def test_another_decision_from_the_same_form_gets_a_new_key(console: Console) -> None:
    # A key is one decision: after a refused input the corrected one is another request.
    _wf, run_id = await console.at_gate(reviewed_loop(), "lp")
    page = console.page
    keys: list[str | None] = []

    async def refuse_first(route: Any) -> None:
        keys.append(route.request.headers.get("idempotency-key"))
        if len(keys) == 1:
            await route.fulfill(
                status=503,
                json={"error": {"code": "unavailable", "message": "No worker.", "details": []}},
            )
        else:
            await route.continue_()

    await page.route("**/approve", refuse_first)
    await console.goto("/console/approvals")
    card = page.locator(f'article[data-run-id="{run_id}"]').first
    await card.get_by_role("button", name="Continue loop").click()
    await expect(card.get_by_role("alert")).to_contain_text("Not delivered")
    await card.get_by_label("Feedback").fill("Enough")
    await card.get_by_role("button", name="End loop").click()
    await expect(card.get_by_role("status")).to_contain_text("Rejected: lp")
    assert len(keys) == 2 and keys[0] and keys[1] and keys[0] != keys[1], keys
