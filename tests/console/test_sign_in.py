"""Signing in to the console in `jwt` mode: a pasted token, kept in the tab, never in a URL."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.hitl.helpers import approve, wait_for_gate
from tests.support.identity import OTHER_SECRET, token

READ_AND_CONTROL = ("workflows-read", "workflows-control")
LIVE = 15_000  # ms


def watch(page: Any) -> tuple[list[str], list[Any]]:
    """Every URL the tab navigates to, and every API request it sends."""
    urls: list[str] = []
    requests: list[Any] = []
    page.on("framenavigated", lambda frame: urls.append(frame.url))
    page.on("request", lambda r: requests.append(r) if "/api/v1/" in r.url else None)
    return urls, requests


async def sign_in(console: Console, value: str, page: Any = None) -> None:
    page = page or console.page
    await page.get_by_label("Access token").fill(value)
    await page.get_by_role("button", name="Sign in").click()


async def test_a_pasted_token_signs_in_for_this_tab_only_and_never_shows_in_a_url(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform
    # A second gate keeps the run going while its page opens (a finished run's page reads
    # no event stream, and the stream's token is checked below); a 3 s step did, unless
    # the machine was slow.
    nodes = [*confirm_gate(), echo("hold", {"requiresConfirmation": True})]
    wf = await p.create({"name": "Ship orders", "nodes": nodes})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    page = console.page
    urls, requests = watch(page)
    alice = token("alice", READ_AND_CONTROL, name="Alice Approver")

    await console.goto("/console/approvals")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert unquote(page.url).endswith("/console/sign-in?next=/console/approvals")
    assert (await console.platform.api.get("/console/config.json")).json()["authMode"] == "jwt"
    await expect(page.get_by_text("needs a token for every request")).to_be_visible()
    await console.shoot("sign-in-jwt")
    await console.check_accessible()

    await sign_in(console, token("alice", READ_AND_CONTROL, key=OTHER_SECRET))
    await expect(page.get_by_role("alert")).to_contain_text("Not signed in")
    await expect(page.get_by_label("Access token")).to_be_focused()

    await sign_in(console, alice)
    await expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
    await expect(page.locator("#who")).to_contain_text("Signed in as Alice Approver")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved: ship")

    await card.get_by_role("link", name="Follow the run").click()
    await console.drawn()
    await expect(page.locator("[data-role=live-state]")).to_have_attribute("data-state", "live")
    await wait_for_gate(p, wf, run_id, "hold")
    held = await approve(p, wf, run_id, stepId="hold", resolution="confirm")
    assert held.status_code == 200, held.text
    status = page.locator("[data-role=run-status] .badge")
    await expect(status).to_have_text("completed", timeout=LIVE)
    run = await p.wait(wf, run_id)
    assert run["resolvedRequirements"][0]["decidedBy"] == "alice"
    # Who triggered it, and how (the page showed only "manual").
    who = run["triggeredBy"]["username"] or run["triggeredBy"]["userId"]
    triggered = page.locator("dl.facts div").filter(has_text="Triggered by").locator("dd")
    await expect(triggered).to_have_text(f"{who} (manual)")

    assert not [u for u in urls if alice in u or alice in unquote(u)], "the token was in a URL"
    signed = [r for r in requests if r.headers.get("authorization") == f"Bearer {alice}"]
    assert any(r.url.endswith(f"/runs/{run_id}/events") for r in signed), "stream sent no token"
    unsigned = [r.url for r in requests if "authorization" not in r.headers]
    assert len(unsigned) == 1 and "/api/v1/approvals" in unsigned[0]  # the one before sign-in
    stored = await page.evaluate(
        "() => ({session: Object.values(sessionStorage), local: Object.keys(localStorage),"
        " cookies: document.cookie})"
    )
    assert stored == {"session": [alice], "local": [], "cookies": ""}
    assert await console.context.cookies() == []

    # Another tab has its own session: it asks again. Signing out forgets the token.
    other = await console.new_tab()
    await console.goto("/console/workflows", other)
    await expect(other.get_by_role("heading", name="Sign in")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()
    await console.drawn()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert await page.evaluate("() => sessionStorage.length") == 0


async def test_an_expired_token_brings_the_sign_in_back_with_a_reason(
    jwt_console: Console,
) -> None:
    console = jwt_console
    page = console.page
    await console.goto("/console/sign-in")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
    # Time passes: the token in the tab is past its expiry (and the 30 s leeway).
    expired = token("alice", READ_AND_CONTROL, expires_in=-120)
    await page.evaluate("t => sessionStorage.setItem('trellis.console.token', t)", expired)
    await console.goto("/console/workflows")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("did not accept the current token")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await expect(page.get_by_role("heading", name="Workflows")).to_be_visible()


async def test_a_caller_without_the_control_scope_is_told_and_nothing_changes(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform
    wf = await p.create({"nodes": confirm_gate()})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    grants = {"grants": [{"principal": "user:viewer", "permissions": ["VIEW"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    page = console.page
    await console.goto("/console/sign-in")
    await sign_in(console, token("viewer", ("workflows-read",)))
    # The inbox lists only the gates the caller may decide: none without workflows-control.
    await expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
    await expect(page.locator(f'article[data-run-id="{run_id}"]')).to_have_count(0)
    # The run page still shows the gate, and says why it offers no decision (the token
    # lacks the scope: pressing Approve was refused only after the fact).
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await console.drawn()
    card = page.locator(f'article[data-run-id="{run_id}"]')
    await expect(card).to_contain_text("You may see this gate but not decide it")
    await expect(card).to_contain_text("workflows-control")
    await expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    # What the console no longer offers, the API refuses, and changes nothing.
    refused = await p.api.post(
        f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "ship", "resolution": "confirm"},
        headers={"Authorization": f"Bearer {token('viewer', ('workflows-read',))}"},
    )
    assert refused.status_code == 403, refused.text
    run = await wait_for_gate(p, wf, run_id, "ship")
    assert run["resolvedRequirements"] == []


async def test_signing_in_returns_to_console_pages_only(jwt_console: Console) -> None:
    # `next=/console/../api/v1/workflows` passed a check of its prefix, and signing in left
    # the console for the API's JSON.
    console = jwt_console
    page = console.page
    outside = [
        "/console/../api/v1/workflows",
        "/console/%2e%2e/api/v1/workflows",
        "/console/..\\api/v1/workflows",
        "//example.com/console/",
        "https://example.com/console/",
        "/console/sign-in",
    ]
    for next_path in outside:
        await console.goto(f"/console/sign-in?next={quote(next_path, safe='')}")
        await sign_in(console, token("alice", READ_AND_CONTROL))
        await expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
        assert page.url == f"{console.base_url}/console/", next_path
    await console.goto(f"/console/sign-in?next={quote('/console/workflows?q=x', safe='')}")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await expect(page.get_by_role("heading", name="Workflows")).to_be_visible()
    assert page.url == f"{console.base_url}/console/workflows?q=x"
