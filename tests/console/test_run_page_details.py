"""The run page's node runs: every one of a node's runs reachable, not only its latest."""

from __future__ import annotations

from playwright.async_api import expect

from tests.builders import node
from tests.console.console import Console


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
