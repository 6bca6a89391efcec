"""Restoring an old version from a workflow's page, in a real browser against the real API:
the old definition saved as a new version, and the API's 412 when the workflow changed
since the page read it."""

from __future__ import annotations

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console


async def test_restore_saves_an_old_version_as_a_new_one(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    url = f"/api/v1/workflows/{wf}"
    changed = {"nodes": [echo("greet", text="goodbye")], "description": "changed"}
    assert (await p.api.put(url, json=changed)).is_success
    page = await console.goto(f"/console/workflows/{wf}")
    versions = page.locator("section[aria-labelledby=versions-h]")
    # The current version is not offered.
    await expect(versions.locator("li[data-version='2'] button")).to_have_count(0)
    await expect(versions.locator("li[data-version='2']")).to_contain_text("(current)")

    await versions.get_by_role("button", name="Restore v1").click()
    dialog = page.get_by_role("dialog", name="Restore v1?")
    await dialog.get_by_role("button", name="Restore v1").click()
    await expect(versions.get_by_role("status")).to_have_text(
        "Restored v1: its definition is now v3."
    )
    await expect(versions.locator("ol.versions li")).to_have_count(3)
    await expect(versions.locator("li[data-version='3']")).to_contain_text("(current)")
    await console.check_accessible()

    current = (await p.api.get(url)).json()
    v1 = (await p.api.get(f"{url}/versions/1")).json()
    assert current["version"] == 3
    assert current["description"] is None
    assert current["nodes"] == v1["nodes"]


async def test_restore_is_refused_with_412_once_the_workflow_changed(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    url = f"/api/v1/workflows/{wf}"
    assert (await p.api.put(url, json={"nodes": [echo("greet", text="v2")]})).is_success
    page = await console.goto(f"/console/workflows/{wf}")
    # Someone saves while the page is open.
    assert (await p.api.put(url, json={"nodes": [echo("greet", text="v3")]})).is_success

    versions = page.locator("section[aria-labelledby=versions-h]")
    await versions.get_by_role("button", name="Restore v1").click()
    await page.get_by_role("dialog").get_by_role("button", name="Restore v1").click()
    alert = versions.get_by_role("alert")
    await expect(alert).to_contain_text("Not restored: Workflow")
    await expect(alert).to_contain_text("changed since it was read")
    # The API's message and the console's advice are two sentences.
    await expect(alert).to_contain_text("on what it is now. Reload the page")
    await expect(alert.locator("[data-status]")).to_have_attribute("data-status", "412")
    current = (await p.api.get(url)).json()
    assert current["version"] == 3
    assert current["nodes"][0]["config"]["text"] == "v3"


async def test_restore_after_the_pages_own_switch_is_not_refused(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    url = f"/api/v1/workflows/{wf}"
    assert (await p.api.put(url, json={"nodes": [echo("greet", text="v2")]})).is_success
    page = await console.goto(f"/console/workflows/{wf}")
    switch = page.locator(".page-head button.toggle")
    await switch.click()
    await expect(switch).to_have_attribute("aria-pressed", "false")

    versions = page.locator("section[aria-labelledby=versions-h]")
    await versions.get_by_role("button", name="Restore v1").click()
    await page.get_by_role("dialog").get_by_role("button", name="Restore v1").click()
    await expect(versions.get_by_role("status")).to_have_text(
        "Restored v1: its definition is now v3."
    )
    current = (await p.api.get(url)).json()
    assert current["version"] == 3
    assert current["enabled"] is False


async def test_restore_shows_the_restored_name_and_description(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create(
        {"name": "Pays invoices", "description": "The first", "nodes": [echo("greet")]}
    )
    renamed = {"name": "Renamed", "description": "The second", "nodes": [echo("greet")]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}", json=renamed)).is_success
    page = await console.goto(f"/console/workflows/{wf}")
    await expect(page.locator("main h1")).to_have_text("Renamed")

    versions = page.locator("section[aria-labelledby=versions-h]")
    await versions.get_by_role("button", name="Restore v1").click()
    await page.get_by_role("dialog").get_by_role("button", name="Restore v1").click()
    await expect(versions.get_by_role("status")).to_contain_text("Restored v1")
    await expect(page.locator("main h1")).to_have_text("Pays invoices")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    await expect(crumbs.locator("[aria-current=page]")).to_have_text("Pays invoices")
    await expect(page).to_have_title("Pays invoices · Trellis")
    await expect(page.locator("main")).to_contain_text("The first")
    await expect(page.locator("main")).not_to_contain_text("The second")
    await expect(page.get_by_role("button", name="Pays invoices enabled")).to_have_count(1)
