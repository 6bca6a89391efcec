"""The run page's details: a child's status kept current in the lineage, which item or
iteration a decision was for, which schedule started a run, and every node run reachable."""

from __future__ import annotations

import asyncio

from playwright.async_api import expect

from tests.builders import echo, loop, node
from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.console.test_run_page import confirm
from tests.hitl.helpers import approve, control, wait_for_gate, wait_for_requirement

LIVE = 15_000  # ms


async def test_the_lineage_follows_a_child_until_it_ends(module_console: Console) -> None:
    # A finished run's page read its lineage once: a retry's child stayed "pending" there
    # after it had run to its end.
    console = module_console
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    assert (await control(p, wf, run_id, "cancel")).status_code == 200
    await p.wait(wf, run_id)
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await confirm(console, "retry")
    notice = page.get_by_role("status").filter(has_text="Retry: started run")
    child_id = (await notice.get_by_role("link").inner_text()).strip()
    child = page.locator("section[aria-labelledby=lineage-h] li").filter(has_text=child_id)
    await expect(child).to_have_count(1)
    await wait_for_gate(p, wf, child_id, "ship")
    assert (await approve(p, wf, child_id, stepId="ship", resolution="confirm")).status_code == 200
    assert (await p.wait(wf, child_id))["status"] == "completed"
    await expect(child.locator(".badge")).to_have_text("completed", timeout=LIVE)


async def test_decisions_say_which_map_item_or_loop_iteration_they_were_for(
    module_console: Console,
) -> None:
    # "M check confirm dev" twice, "lp confirm" then "lp reject": which one was which?
    console = module_console
    p = console.platform
    gated = echo("check", {"requiresConfirmation": True})
    items = node("M", "map", id="M", itemsCel="['a', 'b']", maxConcurrency=1, children=[gated])
    review = {"requiresIterationReview": True}
    looped = loop("lp", echo("body"), id="lp", max_iterations=3, humanReview=review)
    wf, run_id = await console.at_gate([items, looped], "check")
    for index in (0, 1):
        await wait_for_requirement(p, wf, run_id, "check", itemIndex=index)
        await approve(p, wf, run_id, stepId="check", resolution="confirm")
    for iteration, resolution in ((0, "confirm"), (1, "reject")):
        await wait_for_requirement(p, wf, run_id, "lp", iteration=iteration)
        await approve(p, wf, run_id, stepId="lp", resolution=resolution)
    assert (await p.wait(wf, run_id))["status"] == "completed"
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    rows = page.locator("section[aria-labelledby=decisions-h] tbody tr")
    where = rows.locator("td[data-label='Item or iteration']")
    await expect(where).to_have_text(["item 0", "item 1", "iteration 0", "iteration 1"])
    await expect(rows.locator("td[data-label=Decision]")).to_have_text(
        ["confirm", "confirm", "confirm", "reject"]
    )
    await console.shoot("run-decisions")


async def test_a_run_started_by_a_schedule_says_which(module_console: Console) -> None:
    console = module_console
    p = console.platform
    wf = await p.create({"nodes": [echo("greet")]})
    body = {"intervalSeconds": 86_400, "paused": True}
    made = (await p.api.post(f"/api/v1/workflows/{wf}/schedules", json=body)).json()
    url = f"/api/v1/workflows/{wf}/schedules/{made['id']}/trigger"
    assert (await p.api.post(url)).status_code == 202
    runs: list[dict[str, str]] = []
    for _ in range(150):  # the firing starts its run a moment later
        runs = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
        if runs:
            break
        await asyncio.sleep(0.1)
    [run] = runs
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run['id']}")
    triggered = page.locator("dl.facts div").filter(has_text="Triggered by").locator("dd")
    await expect(triggered).to_have_text(f"schedule {made['id']}")
    link = triggered.get_by_role("link")
    await expect(link).to_have_attribute("href", f"/console/workflows/{wf}")
    await console.check_accessible()


async def test_a_failed_item_of_a_big_map_can_be_reached_in_its_node_runs(
    module_console: Console,
) -> None:
    # Of 50 items the 4th failed (skipped): the panel showed the latest 20 node runs, all
    # completed, and no way to the others.
    console = module_console
    p = console.platform
    dividing = {
        "id": "get",
        "name": "get",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"v": "10 / item"}},
        "stepConfig": {"onError": "skip"},
    }
    items = node("M", "map", id="M", itemsCel="input.items", maxConcurrency=1, children=[dividing])
    wf = await p.create({"nodes": [items]})
    run_id = await p.trigger(wf, {"items": [1, 2, 3, 0, *range(4, 50)]})
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed", run
    [skipped] = [n["id"] for n in run["nodeRuns"] if n["status"] == "skipped"]
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await page.locator('button.node[data-node-id="get"]').click()
    detail = page.locator("#node-detail")
    await expect(detail).to_contain_text("The latest 20 of 50 node runs, newest first.")
    older = detail.get_by_role("button", name="Older")
    await older.click()
    await expect(detail).to_contain_text("Node runs 30 to 11 of 50, newest first.")
    await older.click()
    await expect(detail).to_contain_text("Node runs 10 to 1 of 50, newest first.")
    await expect(older).to_be_disabled()
    card = detail.locator(f'.node-run[data-node-run-id="{skipped}"]')
    await expect(card.locator(".badge")).to_have_text("skipped")
    await expect(card.get_by_role("alert")).to_contain_text("Error")
    await console.shoot("run-node-runs-older")
    await detail.get_by_role("button", name="Newer").click()
    await expect(detail).to_contain_text("Node runs 30 to 11 of 50, newest first.")
    await detail.get_by_role("button", name="Latest").click()
    await expect(detail).to_contain_text("The latest 20 of 50 node runs, newest first.")
    await console.check_accessible()
