"""Run pages in hidden tabs let go of their event streams: Chromium opens 6 connections to a
host, and 6 run pages each holding a stream stalled every other tab of the console (a 7th
page never loaded, a decision got no answer)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.hitl.helpers import approve
from tests.support.polling import eventually

LIVE = 15_000  # ms

# Playwright's tabs in one context are all visible: the test says a tab is hidden or shown.
SET_VISIBILITY = """(state) => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


class Streams:
    """A tab's event-stream requests: each one's Last-Event-ID, and how many are open."""

    def __init__(self, tab: Any) -> None:
        self.resumed_after: list[str | None] = []
        self.ended = 0
        tab.on("request", self.opened)
        tab.on("requestfailed", self.closed)
        tab.on("requestfinished", self.closed)

    def opened(self, request: Any) -> None:
        if request.url.endswith("/events"):
            self.resumed_after.append(request.headers.get("last-event-id"))

    def closed(self, request: Any) -> None:
        if request.url.endswith("/events"):
            self.ended += 1

    @property
    def open(self) -> int:
        return len(self.resumed_after) - self.ended


async def test_hidden_run_pages_close_their_streams_and_resume_when_shown(
    console: Console,
) -> None:
    p = console.platform
    runs = [await console.at_gate(confirm_gate(), "ship") for _ in range(7)]
    tabs: list[tuple[Any, Streams]] = []
    for wf, run_id in runs[:6]:
        tab = await console.new_tab()
        streams = Streams(tab)
        await console.goto(f"/console/workflows/{wf}/runs/{run_id}", tab)
        await eventually(lambda s=streams: s.open == 1)
        tabs.append((tab, streams))

    for tab, _streams in tabs:
        await tab.evaluate(SET_VISIBILITY, "hidden")
    for _tab, streams in tabs:
        await eventually(lambda s=streams: s.open == 0)

    # A seventh run page loads, and its gate is decided from it.
    wf, run_id = runs[6]
    page = await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_role("status").filter(has_text="Approved: ship")).to_be_visible()
    await expect(page.locator("[data-role=run-status] .badge")).to_have_text(
        "completed", timeout=LIVE
    )

    # The run of a hidden tab moves on; shown again, the tab resumes after the last event
    # it had, and so misses none.
    (tab, streams), (wf, run_id) = tabs[0], runs[0]
    graph = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}/graph")).json()
    assert (await approve(p, wf, run_id, stepId="ship", resolution="confirm")).status_code == 200
    await p.wait(wf, run_id)
    await tab.wait_for_timeout(1000)
    assert len(streams.resumed_after) == 1, "a hidden tab opened its stream again"
    await tab.bring_to_front()
    await tab.evaluate(SET_VISIBILITY, "visible")
    await eventually(lambda: len(streams.resumed_after) == 2)
    assert streams.resumed_after[1] == str(graph["lastEventId"])
    await expect(tab.locator('button.node[data-node-id="after"] .badge')).to_have_text(
        "completed", timeout=LIVE
    )
    await expect(tab.locator("[data-role=run-status] .badge")).to_have_text("completed")
    await expect(tab.locator("[data-role=live-state]")).to_contain_text("The run has ended")


async def test_an_inbox_in_a_hidden_tab_asks_nothing_and_refreshes_when_shown(
    console: Console,
) -> None:
    """The inbox asked for its gates every 10 s in a hidden tab too, all day; it asks
    nothing while hidden, and at once when shown again, with the gates that came meanwhile."""
    page = console.page
    await page.clock.install()
    await console.goto("/console/approvals")
    await expect(page.get_by_text("Nothing is waiting for you.")).to_be_visible()
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/approvals" in r.url else None)

    await page.evaluate(SET_VISIBILITY, "hidden")
    await console.at_gate(confirm_gate(), "ship")
    await page.clock.run_for(35_000)  # three of its refreshes
    assert sent == [], "asked in a hidden tab"

    await page.evaluate(SET_VISIBILITY, "visible")
    await expect(page.get_by_text("1 gate waiting.")).to_be_visible()
    assert len(sent) == 1, sent
    await page.clock.run_for(10_500)  # and on its timer again
    await eventually(lambda: len(sent) == 2)
