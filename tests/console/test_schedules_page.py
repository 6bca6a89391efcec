"""A workflow's schedules on its page, in a real browser against the real API and Temporal:
create through the form, pause and unpause, trigger now, delete, the API's errors shown."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from playwright.async_api import expect

from app.auth.caller import READ, WRITE
from tests.builders import echo
from tests.console.console import Console
from tests.support.identity import token
from tests.support.platform import Platform
from tests.support.schedule_list import until_listed

LIVE = 15_000  # ms


async def schedule(p: Platform, wf: str, **body: Any) -> dict[str, Any]:
    response = await p.api.post(f"/api/v1/workflows/{wf}/schedules", json=body)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    await until_listed(p.api, wf, made["id"])  # the page draws its list from Temporal's
    return made


def section(page: Any) -> Any:
    return page.locator("section[aria-labelledby=schedules-h]")


async def test_a_schedule_created_through_the_form_is_listed_with_its_next_firings(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    page = await console.goto(f"/console/workflows/{wf}")
    schedules = section(page)
    await expect(schedules).to_contain_text("No schedules.")

    await schedules.get_by_text("New schedule").click()
    await schedules.get_by_label("Cron expression").fill("*/5 * * * *")
    await schedules.get_by_label("Time zone").fill("Europe/Berlin")
    await schedules.get_by_label("Overlap policy").select_option("allow_all")
    await schedules.get_by_label("Input of its runs (JSON object)").fill('{"report": "daily"}')
    await schedules.get_by_role("button", name="Create schedule").click()
    card = schedules.locator("li.schedule")
    await expect(card).to_have_count(1)
    # The button pressed has the focus again (disabled while sending, it had lost it).
    await expect(schedules.get_by_role("button", name="Create schedule")).to_be_focused()
    await expect(card.get_by_role("heading", level=3)).to_have_text(
        "Cron */5 * * * * (Europe/Berlin)"
    )
    await expect(card.locator(".badge")).to_have_text("active")
    await expect(card.locator("ol.next li")).to_have_count(5)
    # Shown in the reader's time zone, which says so beside the schedule's own.
    zone = await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    await expect(card.get_by_role("heading", level=4).first).to_have_text(
        f"Next firings ({zone} time)"
    )
    await expect(card).to_contain_text("allow all")
    await expect(card).to_contain_text("by dev")

    await schedules.get_by_text("Every N seconds").click()
    await expect(schedules.get_by_label("Cron expression")).to_be_hidden()
    await schedules.get_by_label("Every (seconds)").fill("3600")
    await schedules.get_by_role("button", name="Create schedule").click()
    await expect(card).to_have_count(2)
    await expect(card.nth(1).get_by_role("heading", level=3)).to_have_text("Every 3600 s (1 h 0 m)")

    ids = await card.evaluate_all("cards => cards.map((c) => c.dataset.scheduleId)")
    made = {s["cron"] or s["intervalSeconds"]: s for s in await until_listed(p.api, wf, *ids)}
    assert made["*/5 * * * *"]["timeZone"] == "Europe/Berlin"
    assert made["*/5 * * * *"]["initialInput"] == {"report": "daily"}
    assert made["*/5 * * * *"]["overlapPolicy"] == "allow_all"
    # The form keeps what was typed: the second took the same policy and input.
    assert made[3600]["overlapPolicy"] == "allow_all"
    assert "cron" not in made[3600] or made[3600]["cron"] is None
    # Drawn afresh from the API's list, both are there.
    await console.goto(f"/console/workflows/{wf}")
    await expect(card).to_have_count(2)
    await console.shoot("workflow-schedules")
    await console.check_accessible()


async def test_a_bad_cron_shows_the_apis_400_and_makes_nothing(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    page = await console.goto(f"/console/workflows/{wf}")
    schedules = section(page)
    await schedules.get_by_text("New schedule").click()
    await schedules.get_by_label("Cron expression").fill("61 * * * *")
    await schedules.get_by_role("button", name="Create schedule").click()
    alert = schedules.get_by_role("alert")
    await expect(alert).to_contain_text("Not created:")
    await expect(alert).to_contain_text("is not a cron expression this API accepts")
    await expect(alert.locator("[data-status]")).to_have_attribute("data-status", "400")
    # Its one detail is its message: said once.
    await expect(alert.get_by_text("is not a cron expression")).to_have_count(1)
    # The field the API named is marked and has the focus.
    cron = schedules.get_by_label("Cron expression")
    await expect(cron).to_have_attribute("aria-invalid", "true")
    await expect(cron).to_be_focused()
    await cron.fill("0 0 31 2 *")
    await schedules.get_by_role("button", name="Create schedule").click()
    await expect(alert).to_contain_text("never fires")
    await expect(cron).to_be_focused()
    await cron.fill("0 9 * * *")
    await schedules.get_by_label("Time zone").fill("Mars/Olympus")
    await schedules.get_by_role("button", name="Create schedule").click()
    await expect(alert).to_contain_text("unknown IANA time zone")
    await expect(schedules.get_by_label("Time zone")).to_have_attribute("aria-invalid", "true")
    await expect(schedules.get_by_label("Time zone")).to_be_focused()
    await expect(cron).not_to_have_attribute("aria-invalid", "true")
    await expect(schedules).to_contain_text("No schedules.")
    assert (await p.api.get(f"/api/v1/workflows/{wf}/schedules")).json()["schedules"] == []


async def test_a_refused_field_has_the_focus_and_its_message_under_it(
    module_console: Console,
) -> None:
    # As a gate's form does: the reason is read with the field the focus lands on.
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    page = await console.goto(f"/console/workflows/{wf}")
    schedules = section(page)
    await schedules.get_by_text("New schedule").click()
    create = schedules.get_by_role("button", name="Create schedule")
    await create.click()
    cron = schedules.get_by_label("Cron expression")
    await expect(cron).to_be_focused()
    await expect(cron).to_have_attribute("aria-invalid", "true")
    await expect(cron).to_have_accessible_description(re.compile("Give a cron expression."))
    await expect(schedules.get_by_role("alert")).to_contain_text("Not created:")
    await console.shoot("schedule-refused")

    await schedules.get_by_text("Every N seconds").click()
    every = schedules.get_by_label("Every (seconds)")
    await every.fill("1.5")
    await create.click()
    await expect(every).to_be_focused()
    await expect(every).to_have_accessible_description(re.compile("whole number of seconds"))
    await expect(cron).not_to_have_attribute("aria-invalid", "true")

    await every.fill("60")
    editor = schedules.get_by_label("Input of its runs (JSON object)")
    await editor.fill("[1]")
    await create.click()
    await expect(editor).to_be_focused()
    await expect(editor).to_have_accessible_description(re.compile("must be a JSON object"))
    await expect(every).not_to_have_attribute("aria-invalid", "true")
    await expect(every).to_have_accessible_description("")

    # The API's refusal too: its message under the field it names.
    await schedules.get_by_text("On a cron").click()
    await cron.fill("61 * * * *")
    await editor.fill("{}")
    await create.click()
    await expect(cron).to_be_focused()
    await expect(cron).to_have_accessible_description(re.compile("not a cron expression"))
    await console.check_accessible()
    assert (await p.api.get(f"/api/v1/workflows/{wf}/schedules")).json()["schedules"] == []


async def test_a_refusal_is_not_left_marked_on_a_timing_no_longer_chosen(
    module_console: Console,
) -> None:
    # Refused as "Every N seconds", then "On a cron" and back: the hidden field kept its
    # mark and message, read again as if the new choice had been refused.
    console = module_console
    wf = await console.platform.create({"nodes": [echo("greet", text="hello")]})
    page = await console.goto(f"/console/workflows/{wf}")
    schedules = section(page)
    await schedules.get_by_text("New schedule").click()
    await schedules.get_by_text("Every N seconds").click()
    every = schedules.get_by_label("Every (seconds)")
    await every.fill("1.5")
    await schedules.get_by_role("button", name="Create schedule").click()
    await expect(every).to_have_attribute("aria-invalid", "true")
    await schedules.get_by_text("On a cron").click()
    await schedules.get_by_text("Every N seconds").click()
    await expect(every).not_to_have_attribute("aria-invalid", "true")
    await expect(every).to_have_accessible_description("")
    await console.check_accessible()


async def test_pause_and_unpause_show_the_state_and_its_note(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    made = await schedule(p, wf, intervalSeconds=86_400)
    page = await console.goto(f"/console/workflows/{wf}")
    card = section(page).locator("li.schedule")
    await expect(card).to_have_count(1)

    await card.get_by_role("button", name="Pause").click()
    await expect(card.locator(".badge")).to_have_text("paused")
    await expect(card.locator("[data-role=note]")).to_have_text(
        "Paused by dev through the Trellis API"
    )
    await expect(card).to_contain_text("None while paused.")
    url = f"/api/v1/workflows/{wf}/schedules/{made['id']}"
    assert (await p.api.get(url)).json()["paused"] is True

    await card.get_by_role("button", name="Unpause").click()
    await expect(card.locator(".badge")).to_have_text("active")
    await expect(card.locator("[data-role=note]")).to_have_text(
        "Unpaused by dev through the Trellis API"
    )
    await expect(card.locator("ol.next li")).not_to_have_count(0)
    assert (await p.api.get(url)).json()["paused"] is False


async def test_trigger_now_starts_a_run_its_firing_links_to(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    made = await schedule(p, wf, intervalSeconds=86_400, initialInput={"who": "Ada"})
    page = await console.goto(f"/console/workflows/{wf}")
    card = section(page).locator("li.schedule")
    await expect(card).to_contain_text("None yet.")

    await card.get_by_role("button", name="Trigger now").click()
    await expect(card).to_contain_text("Fired: its run started.", timeout=LIVE)
    link = card.locator("ol.recent a")
    await expect(link).to_have_count(1)
    # The runs section shows it too.
    runs = page.locator("section[aria-labelledby=runs-h] tbody tr")
    await expect(runs).to_have_count(1)
    await link.click()
    await console.drawn()
    await expect(page).to_have_url(re.compile(r"/runs/run-"))
    run_id = page.url.rsplit("/", 1)[1]
    run = await p.wait(wf, run_id)
    assert run["scheduleId"] == made["id"]
    assert run["initialInput"] == {"who": "Ada"}


async def test_every_time_on_a_schedules_card_names_the_zone_it_is_in(
    module_console: Console,
) -> None:
    # As the next firings do: the reader's zone, named, not the schedule's.
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    made = await schedule(p, wf, cron="0 9 * * *", timeZone="Asia/Tokyo")
    url = f"/api/v1/workflows/{wf}/schedules/{made['id']}"
    assert (await p.api.post(f"{url}/trigger")).status_code == 202
    for _ in range(150):  # Temporal records the firing a moment later
        if (await p.api.get(url)).json()["recentActions"]:
            break
        await asyncio.sleep(0.1)
    page = await console.goto(f"/console/workflows/{wf}")
    card = section(page).locator("li.schedule")
    await expect(card.locator("ol.recent li")).to_have_count(1)
    zone = await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    await expect(card.get_by_role("heading", level=4)).to_have_text(
        [f"Next firings ({zone} time)", f"Recent firings ({zone} time)"]
    )
    created = card.locator("dd", has=page.locator("time"))
    await expect(created).to_contain_text(f" ({zone} time) by dev")


async def test_many_schedules_fold_all_but_the_newest_five_as_versions_do(
    module_console: Console,
) -> None:
    # 100 schedules, each card drawn in full, made a page 30,000 px long.
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    made = [await schedule(p, wf, intervalSeconds=3600 * (n + 1)) for n in range(8)]
    page = await console.goto(f"/console/workflows/{wf}")
    schedules = section(page)
    folded = schedules.locator("details:not(.new-schedule)")
    await expect(folded.locator("summary")).to_have_text("3 earlier schedules")
    shown = schedules.locator("ul.schedules:not(details *) > li")
    await expect(shown).to_have_count(5)
    await expect(shown.last).to_have_attribute("data-schedule-id", made[-1]["id"])
    await expect(folded.locator("li.schedule")).to_have_count(3)
    await expect(folded.locator("li.schedule").first).to_be_hidden()

    # Opened with the keyboard: the summary keeps the focus, Tab goes on into the first card.
    await folded.locator("summary").focus()
    await page.keyboard.press("Enter")
    first = folded.locator("li.schedule").first
    await expect(first).to_be_visible()
    await expect(first).to_have_attribute("data-schedule-id", made[0]["id"])
    await expect(folded.locator("summary")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(first.get_by_role("button", name="Pause")).to_be_focused()

    # A folded one deleted: the count follows and the fold stays open.
    await first.get_by_role("button", name="Delete").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete schedule").click()
    await expect(folded.locator("summary")).to_have_text("2 earlier schedules")
    await expect(folded.locator("li.schedule").first).to_be_visible()
    await expect(shown).to_have_count(5)
    await console.check_accessible()


async def test_delete_asks_first_and_then_removes_the_schedule(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    made = await schedule(p, wf, cron="0 9 * * MON-FRI", timeZone="UTC")
    page = await console.goto(f"/console/workflows/{wf}")
    card = section(page).locator("li.schedule")
    await expect(card).to_have_count(1)

    await card.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete this schedule?")
    await expect(dialog).to_contain_text("Cron 0 9 * * MON-FRI (UTC) stops firing")
    await dialog.get_by_role("button", name="Go back").click()
    await expect(dialog).to_have_count(0)
    await expect(card).to_have_count(1)

    await card.get_by_role("button", name="Delete").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete schedule").click()
    await expect(section(page)).to_contain_text("No schedules.")
    url = f"/api/v1/workflows/{wf}/schedules/{made['id']}"
    assert (await p.api.get(url)).status_code == 404


async def test_a_caller_the_workflow_is_only_shown_to_sees_the_apis_refusal(
    jwt_console: Console,
) -> None:
    console = jwt_console
    p = console.platform  # alice, who owns what it makes
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    await schedule(p, wf, intervalSeconds=86_400)
    grants = {"grants": [{"principal": "user:bob", "permissions": ["VIEW"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    page = console.page
    await console.goto("/console/sign-in", page)
    await page.get_by_label("Access token").fill(token("bob", [READ, WRITE]))
    await page.get_by_role("button", name="Sign in").click()
    await console.drawn(page)
    await console.goto(f"/console/workflows/{wf}")
    card = section(page).locator("li.schedule")
    await expect(card).to_have_count(1)
    # Without workflows-control, what needs it is offered disabled, saying why.
    await expect(card.get_by_role("button", name="Trigger now")).to_be_disabled()
    await section(page).get_by_text("New schedule").click()
    await expect(section(page).get_by_role("button", name="Create schedule")).to_be_disabled()

    await card.get_by_role("button", name="Pause").click()
    alert = card.get_by_role("alert")
    await expect(alert).to_contain_text("Pause: not done:")
    await expect(alert.locator("[data-status]")).to_have_attribute("data-status", "403")
    await expect(card.locator(".badge")).to_have_text("active")
    # The refusal gives back only what the token's scopes allow.
    await expect(card.get_by_role("button", name="Pause")).to_be_enabled()
    await expect(card.get_by_role("button", name="Trigger now")).to_be_disabled()
    await console.check_accessible()
