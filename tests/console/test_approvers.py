"""Who may decide a gate, in the browser: only its approvers see it in their inbox."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console
from tests.hitl.helpers import wait_for_gate
from tests.support.identity import token

LIVE = 15_000  # ms


async def sign_in_as(console: Console, page: Any, value: str) -> None:
    await console.goto("/console/sign-in", page)
    await page.get_by_label("Access token").fill(value)
    await page.get_by_role("button", name="Sign in").click()
    await console.drawn(page)


async def test_a_user_who_is_not_an_approver_does_not_see_the_gate(jwt_console: Console) -> None:
    console = jwt_console
    p = console.platform  # calls as alice, who owns what it creates
    review = {
        "requiresConfirmation": True,
        "confirmationMessage": "Pay the invoice?",
        "approvers": ["user:carol", "role:finance"],
    }
    wf = await p.create({"name": "Payments", "nodes": [echo("pay", review), echo("done")]})
    viewers = ("user:bob", "user:carol", "role:finance")
    grants = {"grants": [{"principal": who, "permissions": ["VIEW"]} for who in viewers]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "pay")
    gate = f'article[data-run-id="{run_id}"]'

    # Bob may see the workflow and holds every scope, but is no approver: his inbox is empty.
    bob = console.page
    await sign_in_as(console, bob, token("bob", name="Bob"))
    await expect(bob.get_by_role("heading", name="Approvals")).to_be_visible()
    await expect(bob.locator(".summary")).to_have_text("Nothing is waiting for you.")
    await expect(bob.locator(gate)).to_have_count(0)
    await console.shoot("inbox-not-an-approver")
    # On the run page he sees who may decide; trying anyway is refused and changes nothing.
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    card = bob.locator(gate)
    await expect(card.locator("[data-role=approvers]")).to_have_text("user:carol, role:finance")
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("alert")).to_contain_text("You may not decide this gate")
    assert (await wait_for_gate(p, wf, run_id, "pay"))["resolvedRequirements"] == []

    # Dave is in the finance role: he sees it. Carol is named: she sees it and decides.
    dave = await console.new_tab()
    await sign_in_as(console, dave, token("dave", roles=["finance"]))
    await expect(dave.locator(gate)).to_have_count(1)
    carol = await console.new_tab()
    await sign_in_as(console, carol, token("carol", name="Carol"))
    card = carol.locator(gate)
    await expect(card).to_contain_text("Pay the invoice?")
    await expect(card.locator("[data-role=approvers]")).to_have_text("user:carol, role:finance")
    await console.shoot("inbox-approver", carol)
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved: pay")
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed"
    assert run["resolvedRequirements"][0]["decidedBy"] == "carol"


async def test_a_read_only_sign_in_is_offered_no_control_it_could_not_use(
    jwt_console: Console,
) -> None:
    # Every button was enabled for a token with workflows-read only, and each press was
    # refused with a 403 after the fact.
    console = jwt_console
    p = console.platform
    review = {"requiresConfirmation": True, "confirmationMessage": "Ship it?"}
    wf = await p.create({"name": "Read only", "nodes": [echo("ship", review), echo("done")]})
    grants = {"grants": [{"principal": "user:rita", "permissions": ["VIEW"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    rita = console.page
    await sign_in_as(console, rita, token("rita", ["workflows-read"], name="Rita"))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    card = rita.locator(f'article[data-run-id="{run_id}"]')
    await expect(card).to_contain_text("You may see this gate but not decide it")
    await expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    for action in ("pause", "cancel"):
        await expect(rita.locator(f'button[data-action="{action}"]')).to_be_disabled()
    await expect(rita.locator("[data-role=no-control]")).to_contain_text("workflows-control")
    await console.goto(f"/console/workflows/{wf}")
    await expect(rita.get_by_role("button", name="Trigger run")).to_be_disabled()
    await expect(rita.get_by_role("button", name="Read only enabled")).to_be_disabled()
    await console.check_accessible()
    # Alice, who holds every scope, is offered them all.
    alice = await console.new_tab()
    await sign_in_as(console, alice, token("alice", name="Alice"))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}", alice)
    alice_card = alice.locator(f'article[data-run-id="{run_id}"]')
    await expect(alice_card.get_by_role("button", name="Approve")).to_be_enabled()
    await expect(alice.locator('button[data-action="pause"]')).to_be_enabled()


async def test_scopes_kept_at_a_dotted_claim_path_are_read_as_the_api_reads_them(
    nested_scopes_console: Console,
) -> None:
    # With TRELLIS_JWT_SCOPES_CLAIM=realm_access.scopes the console looked for a key of
    # that name, found none, and offered nobody any decision or control.
    console = nested_scopes_console
    p = console.platform
    review = {"requiresConfirmation": True, "confirmationMessage": "Ship it?"}
    wf = await p.create({"name": "Nested", "nodes": [echo("ship", review), echo("done")]})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    nested = {"scopes": "workflows-read workflows-control"}
    page = console.page
    await sign_in_as(console, page, token("alice", scope=None, realm_access=nested))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await expect(card.get_by_role("button", name="Approve")).to_be_enabled()
    await expect(page.locator('button[data-action="pause"]')).to_be_enabled()
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved", timeout=LIVE)
