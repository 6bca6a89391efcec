"""Who saved each version, in the browser: the versions list names them, and a diff of two
versions different people saved compares their definitions only."""

from __future__ import annotations

from playwright.async_api import expect

from app.auth.caller import READ, WRITE
from tests.builders import echo
from tests.console.console import Console
from tests.support.identity import as_user, token


async def test_each_version_names_who_saved_it_and_the_diff_compares_definitions_only(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform  # calls as alice, who owns what it creates
    wf = await p.create({"name": "Invoices", "nodes": [echo("greet", text="hello")]})
    grants = {"grants": [{"principal": "user:bob", "permissions": ["VIEW", "EDIT"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    # The same definition saved again by Bob (after a change): the two versions differ
    # in who saved them only.
    url = f"/api/v1/workflows/{wf}"
    assert (await p.api.put(url, json={"description": "draft"})).is_success
    bob = as_user("bob", [READ, WRITE])
    assert (await p.api.put(url, json={"description": None}, headers=bob)).is_success
    page = console.page
    await console.goto("/console/sign-in", page)
    await page.get_by_label("Access token").fill(token("alice", name="Alice"))
    await page.get_by_role("button", name="Sign in").click()
    await console.drawn(page)
    await console.goto(f"/console/workflows/{wf}")
    versions = page.locator("section[aria-labelledby=versions-h]")
    items = versions.locator("ol.versions li")
    await expect(items).to_have_count(3)
    await expect(items.nth(0)).to_contain_text("by alice")
    await expect(items.nth(2)).to_contain_text("by bob")
    await versions.get_by_label("Compare").select_option("1")
    await versions.get_by_label("with").select_option("3")
    await versions.get_by_role("button", name="Show differences").click()
    await expect(versions).to_contain_text("v1 and v3 have the same definition.")
