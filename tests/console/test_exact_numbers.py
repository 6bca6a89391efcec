"""Numbers reach the page and go back to the API as written: 9007199254740993 is not a JS
number (it read as …992, and an edited output or a trigger's input sent …992 back), and
`1.0` is a float the server keeps as one."""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.builders import echo
from tests.console.console import Console
from tests.hitl.helpers import start

BIG = 9007199254740993  # 2**53 + 1: the first integer a JS number cannot hold


async def test_an_edited_output_keeps_a_big_integer_the_user_did_not_touch(
    console: Console,
) -> None:
    p = console.platform
    review = {"requiresOutputReview": True, "outputReviewMessage": "Check the draft"}
    nodes = [
        echo("draft", review, text="first draft", big=BIG),
        echo("publish", got="{{ previous_step_content }}"),
    ]
    wf, run_id = await console.at_gate(nodes, "draft")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    editor = card.get_by_label("Step output (JSON)")
    await expect(editor).to_have_value(re.compile(f'"big": {BIG}'))
    await card.get_by_role("button", name="Format").click()  # formatting keeps it too
    text = await editor.input_value()
    assert f'"big": {BIG}' in text
    await editor.fill(text.replace("first draft", "final copy"))
    await card.get_by_role("button", name="Approve edited output").click()
    await expect(card.get_by_role("status")).to_contain_text("Approved with edits: draft")
    run = await p.wait(wf, run_id)
    edited = run["resolvedRequirements"][0]["editedOutput"]
    assert edited["config"] == {"text": "final copy", "big": BIG}
    assert run["finalOutput"]["config"]["got"]["config"]["big"] == BIG


async def test_a_triggers_input_is_sent_as_typed(console: Console) -> None:
    p = console.platform
    wf = await p.create({"nodes": [echo("hold", {"requiresConfirmation": True})]})
    page = await console.goto(f"/console/workflows/{wf}")
    await page.get_by_label("Initial input (JSON object)").fill(
        f'{{"big": {BIG}, "price": 1.0, "list": [{BIG}, 2.50]}}'
    )
    await page.get_by_role("button", name="Trigger run").click()
    await console.drawn()
    await expect(page).to_have_url(re.compile(r"/runs/run-"))
    run_id = page.url.rsplit("/", 1)[1]
    run = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["initialInput"] == {"big": BIG, "price": 1.0, "list": [BIG, 2.5]}
    assert isinstance(run["initialInput"]["price"], float)  # not the integer 1
    await page.get_by_text("Input and output").click()
    shown = page.get_by_label("Initial input", exact=True)
    await expect(shown).to_contain_text(f'"big": {BIG}')
    await expect(shown).to_contain_text('"price": 1.0')


async def test_a_node_runs_snapshots_show_a_big_integer_as_it_is(console: Console) -> None:
    p = console.platform
    wf, run_id = await start(p, [echo("count", n=BIG)], {"seen": BIG})
    assert (await p.wait(wf, run_id))["status"] == "completed"
    page = await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await page.locator('button.node[data-node-id="count"]').click()
    detail = page.locator("#node-detail")
    await detail.get_by_text("Output snapshot").click()
    await expect(detail.get_by_label(re.compile("^Output snapshot"))).to_contain_text(str(BIG))
    await detail.get_by_text("Input snapshot").click()
    await expect(detail.get_by_label(re.compile("^Input snapshot"))).to_contain_text(str(BIG))
