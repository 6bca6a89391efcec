"""The run page when its reads of the API fail: it says so, asks again, and never takes an
event's status, or a failed read, for what the run or a node is."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Route, expect

from tests.builders import delay, echo, step
from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.hitl.helpers import control, start

LIVE = 15_000  # ms
UNAVAILABLE = {"error": {"code": "service_unavailable", "message": "Try again"}}


async def unavailable(route: Route) -> None:
    await route.fulfill(status=503, json=UNAVAILABLE)


def run_detail(run_id: str) -> re.Pattern[str]:
    """The page's read of the run (its counts), not its graph, stream or node runs."""
    return re.compile(rf"/runs/{run_id}\?nodeRuns=summary$")


def fact(page: Any, label: str) -> Any:
    return page.locator("dl.facts div").filter(has_text=label).locator("dd")


async def test_a_run_that_ends_while_its_reads_fail_is_shown_ended_once_one_succeeds(
    module_console: Console,
) -> None:
    # Its stream said `run_completed` while its reads answered 503: the page stopped there,
    # saying "The run has ended: nothing here changes any more" over 2 of 3 node runs, no
    # end time and no output, while the API said completed.
    console = module_console
    p = console.platform
    wf, run_id = await start(p, [delay("one", 2), delay("two", 2), delay("three", 2)])
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    state = page.locator("[data-role=live-state]")
    await expect(state).to_have_text(re.compile("^Live: node statuses"))
    await page.route(run_detail(run_id), unavailable)
    await expect(state).to_contain_text("the run could not be read", timeout=LIVE)
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed"
    await expect(page.locator("[data-role=run-status] .badge")).to_have_text("completed")
    await page.wait_for_timeout(1000)  # the stream has ended; the reads still fail
    await expect(state).to_contain_text("the run could not be read")
    await page.unroute(run_detail(run_id))
    await expect(fact(page, "Node runs")).to_have_text("3 (3 completed)", timeout=LIVE)
    await expect(state).to_have_text(re.compile("^The run has ended"))
    await expect(fact(page, "Finished")).to_have_count(1)
    await expect(fact(page, "Took")).to_have_count(1)


async def test_a_run_cancelled_while_its_reads_fail_loses_its_gate_once_one_succeeds(
    module_console: Console,
) -> None:
    # It showed "cancelled" with the closed gate's Approve and Reject form, for good.
    console = module_console
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator(".gate")).to_have_count(1)
    await page.route(run_detail(run_id), unavailable)
    assert (await control(p, wf, run_id, "cancel")).status_code == 200
    await p.wait(wf, run_id)
    await expect(page.locator("[data-role=run-status] .badge")).to_have_text(
        "cancelled", timeout=LIVE
    )
    state = page.locator("[data-role=live-state]")
    await expect(state).to_contain_text("the run could not be read", timeout=LIVE)
    await page.unroute(run_detail(run_id))
    await expect(page.locator(".gate")).to_have_count(0, timeout=LIVE)
    await expect(state).to_have_text(re.compile("^The run has ended"))


async def test_a_run_that_ends_while_the_browser_is_offline_is_shown_ended_once_back(
    module_console: Console,
) -> None:
    console = module_console
    p = console.platform
    wf, run_id = await start(p, [delay(f"d{n}", 0.5) for n in range(12)])
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(fact(page, "Node runs")).to_contain_text("completed", timeout=LIVE)
    await console.context.set_offline(True)
    assert (await p.wait(wf, run_id))["status"] == "completed"
    await page.wait_for_timeout(1000)
    await console.context.set_offline(False)
    await expect(fact(page, "Node runs")).to_have_text("12 (12 completed)", timeout=LIVE)
    await expect(page.locator("[data-role=live-state]")).to_have_text(
        re.compile("^The run has ended")
    )


async def test_a_node_whose_runs_cannot_be_read_says_so_never_that_it_has_not_run(
    module_console: Console,
) -> None:
    # Its node runs answered 503: the panel said "The latest 0 of 1 node runs" and "This
    # node has not run (yet) in this run", of a node that had failed.
    console = module_console
    p = console.platform
    nodes = [
        echo("prepare", value=1),
        step("wait", "builtin:delay", {"seconds": "{{ input.seconds }}"}, id="wait"),
    ]
    wf, run_id = await start(p, nodes, {"seconds": 10**9})
    assert (await p.wait(wf, run_id))["status"] == "failed"
    page = console.page
    await page.route("**/nodes/**", unavailable)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await page.locator('button.node[data-node-id="wait"]').click()
    detail = page.locator("#node-detail")
    await expect(detail.get_by_role("alert")).to_contain_text("The node runs could not be read")
    await expect(detail).not_to_contain_text("has not run")
    await expect(detail).not_to_contain_text("The latest 0")
    await page.unroute("**/nodes/**")
    await detail.get_by_role("button", name="Try again").click()
    await expect(detail.locator(".node-run")).to_have_count(1)
    await expect(detail.locator(".node-run")).to_contain_text("at most")
    await expect(detail.get_by_role("alert").filter(has_text="could not be read")).to_have_count(0)
