"""The workflows pages in a real browser: search, enable, trigger, runs by status, version diff."""

from __future__ import annotations

import re
import uuid

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console, first_answer_lost
from tests.hitl.helpers import wait_for_gate

LIVE = 15_000  # ms
# The trigger form's JSON status (the schedule form has one of its own).
TRIGGER_STATUS = "section[aria-labelledby=trigger-h] .json-status"


async def test_search_enable_trigger_and_filter_runs_by_status(console: Console) -> None:
    p = console.platform
    tag = uuid.uuid4().hex[:6]
    wf = await p.create(
        {
            "name": f"Invoice approval {tag}",
            "description": "Pays invoices",
            "nodes": [echo("hello", who="{{ input.name }}")],
        },
        enable=False,
    )
    await p.create({"name": f"Onboarding {tag}", "nodes": [echo("hi")]}, enable=False)
    page = console.page

    await console.goto("/console/workflows")
    await page.get_by_label("Search by name or description").fill(f"invoice approval {tag}")
    await page.get_by_role("button", name="Search").click()
    await console.drawn()
    await expect(page).to_have_url(re.compile(r"/console/workflows\?q="))
    rows = page.locator("tbody tr")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text(f"Invoice approval {tag}")
    toggle = rows.first.get_by_role("button", name=f"Invoice approval {tag} enabled")
    await expect(toggle).to_have_attribute("aria-pressed", "false")
    await console.shoot("workflows")
    await console.check_accessible()
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-pressed", "true")
    assert (await p.api.get(f"/api/v1/workflows/{wf}")).json()["enabled"] is True

    await rows.first.get_by_role("link", name=f"Invoice approval {tag}").click()
    await console.drawn()
    editor = page.get_by_label("Initial input (JSON object)")
    await editor.fill('{"name": ')
    await expect(page.locator(TRIGGER_STATUS)).to_contain_text(
        "Initial input (JSON object) is not valid JSON"
    )
    await page.get_by_role("button", name="Trigger run").click()
    # It read "the input not valid JSON".
    await expect(page.get_by_role("alert")).to_contain_text(
        "Not started: the input is not valid JSON"
    )
    await editor.fill('{"name": "Ada"}')
    await expect(page.locator(TRIGGER_STATUS)).to_have_text("Valid JSON")
    await page.get_by_role("button", name="Trigger run").click()
    await console.drawn()
    await expect(page).to_have_url(re.compile(r"/runs/run-"))
    await expect(page.locator("[data-role=run-status] .badge")).to_have_text(
        "completed", timeout=LIVE
    )
    run_id = page.url.rsplit("/", 1)[1]
    run = await p.wait(wf, run_id)
    assert run["initialInput"] == {"name": "Ada"}

    await (
        page.get_by_role("navigation", name="Breadcrumb")
        .get_by_role("link", name=f"Invoice approval {tag}")
        .click()
    )
    await console.drawn()
    runs = page.locator("section[aria-labelledby=runs-h]")
    await expect(runs.locator("tbody tr")).to_have_count(1)
    await runs.get_by_label("Show runs with").select_option("failed")
    await runs.get_by_role("button", name="Filter").click()
    await console.drawn()
    await expect(page.locator("section[aria-labelledby=runs-h]")).to_contain_text("No failed runs.")
    await (
        page.locator("section[aria-labelledby=runs-h]")
        .get_by_label("Show runs with")
        .select_option("completed")
    )
    await (
        page.locator("section[aria-labelledby=runs-h]").get_by_role("button", name="Filter").click()
    )
    await console.drawn()
    await expect(page.locator("section[aria-labelledby=runs-h] tbody tr")).to_have_count(1)
    await expect(page.locator(f'tr[data-run-id="{run_id}"]')).to_be_visible()


async def test_two_versions_are_compared_line_by_line(console: Console) -> None:
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    changed = await p.api.put(
        f"/api/v1/workflows/{wf}", json={"nodes": [echo("greet", text="good morning")]}
    )
    assert changed.status_code == 200 and changed.json()["version"] == 2
    page = console.page
    await console.goto(f"/console/workflows/{wf}")
    versions = page.locator("section[aria-labelledby=versions-h]")
    await expect(versions.get_by_label("Compare")).to_have_value("1")
    await expect(versions.get_by_label("with")).to_have_value("2")
    await versions.get_by_role("button", name="Show differences").click()
    diff = versions.locator("pre.diff")
    await expect(diff.locator(".diff-del")).to_contain_text('"text": "hello"')
    await expect(diff.locator(".diff-add")).to_contain_text('"text": "good morning"')
    await expect(versions).to_contain_text("v1 → v2: 1 line added, 1 removed")
    await console.shoot("workflow")
    await console.check_accessible()
    await versions.get_by_label("with").select_option("1")
    await versions.get_by_role("button", name="Show differences").click()
    await expect(versions).to_contain_text("v1 and v1 have the same definition.")


async def test_in_dev_mode_nobody_signs_in_and_unknown_pages_say_so(console: Console) -> None:
    page = console.page
    await console.goto("/console/sign-in")
    await expect(page.locator("main")).to_contain_text("runs in dev mode")
    await expect(page.get_by_label("Access token")).to_have_count(0)
    await expect(page.locator("#who")).to_have_text("Dev mode (no sign-in)")
    await console.check_accessible()
    await console.goto("/console/no/such/page")
    await expect(page.get_by_role("heading", name="Page not found")).to_be_visible()


async def test_a_trigger_sent_twice_starts_one_run(console: Console) -> None:
    # A double click, then the same input sent again after its answer was lost: one run.
    p = console.platform
    wf = await p.create({"name": "Once only", "nodes": [echo("hello")]})
    page = console.page
    keys: list[str | None] = []

    await page.route(f"**/api/v1/workflows/{wf}/runs", first_answer_lost(keys))
    await console.goto(f"/console/workflows/{wf}")
    await page.get_by_role("button", name="Trigger run").dblclick()
    await expect(page.get_by_role("alert")).to_contain_text("could not be reached")
    assert len(keys) == 1, keys
    await page.get_by_role("button", name="Trigger run").click()
    await console.drawn()
    await expect(page).to_have_url(re.compile(r"/runs/run-"))
    runs = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
    assert len(runs) == 1, runs
    assert page.url.endswith(runs[0]["id"])
    assert keys[0] and keys[0] == keys[1], keys


async def test_every_version_can_be_compared_beyond_a_page_of_them(console: Console) -> None:
    # More versions than the API's default page of a list (20): the oldest stays comparable.
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="v1")]})
    for n in range(2, 26):
        put = await p.api.put(
            f"/api/v1/workflows/{wf}", json={"nodes": [echo("greet", text=f"v{n}")]}
        )
        assert put.json()["version"] == n
    page = console.page
    await console.goto(f"/console/workflows/{wf}")
    versions = page.locator("section[aria-labelledby=versions-h]")
    await expect(versions.get_by_label("Compare").locator("option")).to_have_count(25)
    await versions.get_by_label("Compare").select_option("1")
    await versions.get_by_role("button", name="Show differences").click()
    await expect(versions).to_contain_text("v1 → v25: 1 line added, 1 removed")
    # The latest ten listed, the rest behind a disclosure: 500 versions put the compare
    # form and the definition 14,000 px down the page.
    await expect(versions.locator("details > summary")).to_have_text("15 earlier versions")
    await expect(versions.locator(":scope > ol.versions > li")).to_have_count(10)
    await expect(versions.locator("details ol.versions > li")).to_have_count(15)


async def test_the_runs_list_and_the_lineage_ask_for_node_run_counts_only(
    console: Console,
) -> None:
    # Each listed run came with all its node runs: 22.5 MB for a page of ten big runs.
    p = console.platform
    wf = await p.create({"name": f"Counted {uuid.uuid4().hex[:6]}", "nodes": [echo("hi")]})
    run_id = await p.trigger(wf)
    await p.wait(wf, run_id)
    asked: list[str] = []
    console.page.on("request", lambda request: asked.append(request.url))
    await console.goto(f"/console/workflows/{wf}")
    await console.drawn()
    await expect(console.page.locator("tbody tr")).to_have_count(1)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await console.drawn()
    await expect(console.page.locator("section[aria-labelledby=lineage-h]")).to_contain_text(
        "No run was started from this run."
    )
    lists = [u for u in asked if re.search(r"/runs(/[^/?]+/children)?\?", u)]
    assert any("/children?" in u for u in lists) and any(f"{wf}/runs?" in u for u in lists)
    assert all("nodeRuns=summary" in u for u in lists), lists


async def test_a_page_of_runs_past_the_last_says_so_and_leads_to_the_last(
    console: Console,
) -> None:
    # It said "No failed runs." on page 100 of 22.
    p = console.platform
    wf = await p.create({"name": f"Paged {uuid.uuid4().hex[:6]}", "nodes": [echo("hi")]})
    run_id = await p.trigger(wf)
    await p.wait(wf, run_id)
    await console.goto(f"/console/workflows/{wf}?page=5")
    runs = console.page.locator("section[aria-labelledby=runs-h]")
    await expect(runs).to_contain_text("Page 5 is past the last (1).")
    await runs.get_by_role("link", name="Go to the last page").click()
    await expect(runs.locator("tbody tr")).to_have_count(1)


async def test_the_enabled_switch_works_from_the_keyboard_and_keeps_the_focus(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    name = f"Keyboard switch {uuid.uuid4().hex[:6]}"
    wf = await p.create({"name": name, "nodes": [echo("hi")]}, enable=False)
    page = await console.goto(f"/console/workflows?q={name}")
    switch = page.get_by_role("button", name=f"{name} enabled")
    await switch.focus()
    await page.keyboard.press("Enter")
    await expect(switch).to_have_attribute("aria-pressed", "true")
    await expect(switch).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(switch).to_have_attribute("aria-pressed", "false")
    await expect(switch).to_be_focused()
    assert (await p.api.get(f"/api/v1/workflows/{wf}")).json()["enabled"] is False


async def test_long_names_words_and_urls_wrap_at_390_px(module_console: Console) -> None:
    console = module_console
    p = console.platform
    word = "d" * 300
    url = "https://example.com/" + "segment/" * 40
    review = {"requiresConfirmation": True, "confirmationMessage": "M" * 200}
    wf = await p.create(
        {
            "name": "Long " + "verylongname" * 10,
            "description": f"See {url} and {word}",
            "nodes": [echo("step-" + "x" * 60, review)],
        }
    )
    await schedule_daily(console, wf, {"k": "v" * 200})
    run_id = await p.trigger(wf, {})
    await wait_for_gate(p, wf, run_id, "step-" + "x" * 60)
    for name, path in (
        ("long-workflows", f"/console/workflows?q={word[:50]}"),
        ("long-workflow", f"/console/workflows/{wf}"),
        ("long-run", f"/console/workflows/{wf}/runs/{run_id}"),
        ("long-inbox", "/console/"),
    ):
        await console.goto(path)
        await console.shoot(name)


async def test_a_long_word_or_url_wraps_in_the_workflows_table_at_1280_px(
    module_console: Console,
) -> None:
    # A 125-character word in a name or a 270-character URL in a description made the
    # table 1,713 px wide in its 1,160 px: the Enabled switch was off the screen. Its cells
    # wrapped anywhere below 700 px only.
    console = module_console
    p = console.platform
    name = "w" * 125
    url = "https://example.com/" + "u" * 250
    wf = await p.create({"name": name, "description": f"See {url}", "nodes": [echo("one")]})
    page = await console.goto(f"/console/workflows?q={name}")
    switch = page.locator(f'tr[data-workflow-id="{wf}"] button.toggle')
    await expect(switch).to_be_visible()
    box = await switch.bounding_box()
    assert box and box["x"] + box["width"] <= 1280, box
    overflow = await page.evaluate(
        "() => [...document.querySelectorAll('.table-wrap')]"
        ".map((w) => w.scrollWidth - w.clientWidth)"
    )
    assert overflow and max(overflow) <= 0, overflow
    await console.shoot("long-word-workflows")


async def schedule_daily(console: Console, wf: str, initial: dict[str, str]) -> None:
    body = {"cron": "0 9 * * *", "timeZone": "UTC", "initialInput": initial, "paused": True}
    made = await console.platform.api.post(f"/api/v1/workflows/{wf}/schedules", json=body)
    assert made.status_code == 201, made.text


async def test_the_runs_list_shows_new_runs_while_the_page_is_open(console: Console) -> None:
    # It showed the runs as they were when the page opened, until a reload.
    p = console.platform
    wf = await p.create({"nodes": [echo("one")]})
    page = await console.goto(f"/console/workflows/{wf}")
    await expect(page.get_by_text("No runs yet.")).to_be_visible()
    run_id = await p.trigger(wf)
    await expect(page.locator(f'tr[data-run-id="{run_id}"]')).to_be_visible(timeout=LIVE)
