"""Moving between console pages in a real browser: a page the user left while it loaded is
never drawn, the skip link stays on the page, and a console that cannot start says so."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console

DUPLICATE_IDS = """() => { const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);
  return ids.filter((id, i) => ids.indexOf(id) !== i); }"""


def slowly(seconds: float, only: str = "") -> Any:
    """A route handler holding back each API request (whose URL holds `only`) `seconds`."""

    async def handle(route: Any) -> None:
        if only in route.request.url:
            await asyncio.sleep(seconds)
        await route.continue_()

    return handle


async def follow_link(page: Any, href: str) -> None:
    """Click a console link to `href`, as a link on a page would be followed."""
    await page.evaluate(
        """(href) => { const a = document.createElement('a'); a.href = href;
          a.textContent = 'go'; document.body.append(a); a.click(); a.remove(); }""",
        href,
    )


async def test_a_run_page_left_while_it_loads_is_never_drawn(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    run_id = await p.trigger(wf, {})
    page = await console.goto("/console/workflows")
    await page.route("**/api/v1/**", slowly(2.5, only="/runs/"))

    await follow_link(page, f"/console/workflows/{wf}/runs/{run_id}")
    await page.wait_for_timeout(300)
    nav = page.get_by_role("navigation", name="Console")
    await nav.get_by_role("link", name="Workflows").click()
    await console.drawn()
    await page.wait_for_timeout(3_500)  # the run page's answers have all come by now
    await expect(page.locator("main h1")).to_have_text(["Workflows"])
    await expect(page.locator("[data-role=run-status]")).to_have_count(0)
    assert await page.evaluate(DUPLICATE_IDS) == []
    assert await page.title() == "Workflows · Trellis"


async def test_back_then_forward_on_a_slow_network_shows_only_the_page_at_the_address(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    a = await p.create({"name": "Page A", "nodes": [echo("greet", text="a")]})
    b = await p.create({"name": "Page B", "nodes": [echo("greet", text="b")]})
    page = await console.goto(f"/console/workflows/{a}")
    await follow_link(page, f"/console/workflows/{b}")
    await expect(page.locator("main h1")).to_have_text(["Page B"])
    await console.drawn()
    await page.route("**/api/v1/**", slowly(1.5))

    await page.go_back(wait_until="commit")
    await page.wait_for_timeout(200)
    await page.go_forward(wait_until="commit")
    await console.drawn()  # B drawn in full: A's answers, asked first, came before
    await expect(page.locator("main h1")).to_have_text(["Page B"])
    await expect(page.locator("#trigger-h")).to_have_count(1)
    assert await page.evaluate(DUPLICATE_IDS) == []
    assert await page.title() == "Page B · Trellis"
    assert page.url.endswith(f"/console/workflows/{b}")


async def test_the_skip_link_moves_focus_to_the_page_and_keeps_what_was_typed(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet", text="hello")]})
    page = await console.goto(f"/console/workflows/{wf}")
    editor = page.get_by_label("Initial input (JSON object)")
    await editor.fill('{"typed": 1}')

    await page.locator("a.skip-link").focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("main")).to_be_focused()
    await page.wait_for_timeout(300)
    await expect(editor).to_have_value('{"typed": 1}')
    await page.keyboard.press("Tab")
    await expect(page.locator("main a").first).to_be_focused()


async def test_a_console_that_cannot_read_its_settings_says_so(module_console: Console) -> None:
    console = module_console
    page = console.page
    await page.route("**/console/config.json", lambda route: route.abort("connectionreset"))
    await page.goto(console.base_url + "/console/")
    await expect(page.locator("main h1")).to_have_text("The console could not start")
    await expect(page.get_by_role("alert")).to_contain_text("Reload the page to try again.")
