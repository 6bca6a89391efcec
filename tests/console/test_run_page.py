"""The run page in a real browser: live statuses, controls with confirmation, node runs, lineage."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Route, expect

from tests.builders import condition, delay, echo, loop, parallel, router, step
from tests.console.console import Console, first_answer_lost
from tests.console.definitions import confirm_gate
from tests.hitl.helpers import approve, start
from tests.support.polling import eventually

LIVE = 15_000  # ms


async def confirm(console: Console, action: str) -> None:
    """Click a run control and confirm it in the dialog."""
    page = console.page
    await page.locator(f"button[data-action={action}]").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await dialog.locator("button[value=ok]").click()
    await expect(dialog).to_have_count(0)


async def test_controls_ask_first_and_the_page_follows_the_run_live(console: Console) -> None:
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    status = page.locator("[data-role=run-status] .badge")
    await expect(status).to_have_text("awaiting approval")
    # Dev mode records no identity: how it was triggered only.
    triggered = page.locator("dl.facts div").filter(has_text="Triggered by").locator("dd")
    await expect(triggered).to_have_text("manual")
    link = page.get_by_role("link", name="Open in Temporal Web UI")
    await expect(link).to_have_attribute(
        "href", f"http://127.0.0.1:8233/namespaces/default/workflows/{run_id}"
    )
    await expect(page.locator("button[data-action=resume]")).to_be_disabled()
    # A node's name for screen readers says its status in words, as its badge does.
    ship = page.locator('button.node[data-node-id="ship"]')
    await expect(ship).to_have_attribute(
        "aria-label", "ship, step, builtin:echo: awaiting approval"
    )

    await page.locator("button[data-action=pause]").click()
    dialog = page.get_by_role("dialog", name="Pause?")
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_role("button", name="Go back")).to_be_focused()
    await console.shoot("run-confirm-dialog")
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    await expect(page.locator("button[data-action=pause]")).to_be_focused()
    assert sent == [], "a dismissed confirmation sends nothing"

    await confirm(console, "pause")
    await expect(status).to_have_text("paused", timeout=LIVE)
    await expect(page.locator("button[data-action=pause]")).to_be_disabled()
    # The controls were re-drawn; the focus is not dropped to the page's body.
    await expect(page.locator("button[data-action=resume]")).to_be_focused()
    await confirm(console, "resume")
    await expect(status).to_have_text("awaiting approval", timeout=LIVE)
    await confirm(console, "cancel")
    await expect(status).to_have_text("cancelled", timeout=LIVE)
    await expect(page.locator('button.node[data-node-id="ship"] .badge')).to_have_text("cancelled")
    await expect(ship).to_have_attribute("aria-label", "ship, step, builtin:echo: cancelled")

    await confirm(console, "retry")
    notice = page.get_by_role("status").filter(has_text="Retry: started run")
    await expect(notice).to_be_visible()
    child_id = (await notice.get_by_role("link").inner_text()).strip()
    lineage = page.locator("section[aria-labelledby=lineage-h]")
    await expect(lineage.get_by_role("link", name=child_id)).to_be_visible()
    await notice.get_by_role("link").click()
    await console.drawn()
    await expect(page.get_by_role("heading", level=1)).to_contain_text(child_id)
    await expect(page.locator("section[aria-labelledby=lineage-h]")).to_contain_text(run_id)
    child = await p.wait(wf, child_id, {"awaiting_approval"})
    assert (child["parentRunId"], child["triggerSource"]) == (run_id, "retry")
    await expect(status).to_have_text("awaiting approval", timeout=LIVE)
    await console.check_accessible()


async def test_focus_returns_to_the_control_even_when_a_live_update_redrew_it(
    console: Console,
) -> None:
    # The run moves on while the dialog is open, so the page re-draws its controls; on
    # Escape the focus goes back to the new Pause button, not to the page's body.
    p = console.platform
    wf, run_id = await console.at_gate([*confirm_gate(), delay("wait", 3)], "ship")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    status = page.locator("[data-role=run-status] .badge")
    await expect(status).to_have_text("awaiting approval")
    pause = page.locator("button[data-action=pause]")
    await pause.click()
    dialog = page.get_by_role("dialog", name="Pause?")
    await expect(dialog).to_be_visible()
    replaced = await pause.element_handle()
    assert (await approve(p, wf, run_id, stepId="ship", resolution="confirm")).status_code == 200
    await expect(status).to_have_text("running", timeout=LIVE)
    assert not await replaced.evaluate("el => el.isConnected"), "the controls were re-drawn"
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    await expect(pause).to_be_focused()


async def test_a_failed_node_shows_its_error_and_can_be_rerun(console: Console) -> None:
    p = console.platform
    nodes = [
        echo("prepare", value=1),
        step("wait", "builtin:delay", {"seconds": "{{ input.seconds }}"}, id="wait"),
    ]
    wf, run_id = await start(p, nodes, {"seconds": 10**9})
    run = await p.wait(wf, run_id)
    assert run["status"] == "failed"
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator("[data-role=run-status] .badge")).to_have_text("failed")
    await expect(page.get_by_role("alert").first).to_contain_text("Error")
    node = page.locator('button.node[data-node-id="wait"]')
    await expect(node).to_have_attribute("aria-label", "wait, step, builtin:delay: failed")
    await node.click()
    await expect(node).to_have_attribute("aria-pressed", "true")
    detail = page.locator("#node-detail")
    await expect(detail.get_by_role("heading", name="wait", level=2)).to_be_focused()
    await expect(detail.locator(".node-run")).to_have_count(1)
    await expect(detail.locator(".node-run")).to_contain_text("at most")
    await detail.get_by_text("Input snapshot").click()
    await expect(detail.locator("pre.json").first).to_contain_text("1000000000")
    await console.shoot("run-failed-node")
    await console.check_accessible()

    await detail.get_by_role("button", name="Rerun from this node").click()
    await page.get_by_role("dialog").locator("button[value=ok]").click()
    notice = page.get_by_role("status").filter(has_text="Rerun: started run")
    await expect(notice).to_be_visible()
    await expect(page.locator("#announcer")).to_have_text("Rerun done")  # it said nothing
    child_id = (await notice.get_by_role("link").inner_text()).strip()
    child = await p.wait(wf, child_id)
    assert child["triggerSource"] == "node_rerun"
    reused = {n["nodeName"]: n["reusedFromNodeRunId"] for n in child["nodeRuns"]}
    assert reused["prepare"] is not None


async def test_the_tree_shows_branches_routes_and_bodies_with_their_statuses(
    console: Console,
) -> None:
    p = console.platform
    nodes = [
        echo("start"),
        parallel("fan", echo("left"), echo("right")),
        condition("big?", "input.amount > 100", echo("approve-big"), falseSteps=[echo("auto")]),
        router("pick", "input.kind", {"a": [echo("in-a")], "b": [echo("in-b"), echo("b-2")]}),
        loop("repeat", echo("again"), max_iterations=2),
    ]
    wf, run_id = await start(p, nodes, {"amount": 5, "kind": "b"})
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed"
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    tree = page.locator("ol.tree")

    def lane(container: str, label: str) -> Any:
        item = tree.locator("li").filter(
            has=page.locator(f'button.node[aria-label^="{container},"]')
        )
        return item.first.locator(".lane").filter(has_text=label)

    await expect(lane("fan", "branch 1").locator("button.node")).to_contain_text(["left"])
    await expect(lane("fan", "branch 2").locator("button.node")).to_contain_text(["right"])
    await expect(lane("big?", "if true").locator("button.node")).to_contain_text(["approve-big"])
    await expect(lane("big?", "if false").locator("button.node")).to_contain_text(["auto"])
    await expect(lane("pick", "route “b”").locator("button.node")).to_contain_text(["in-b", "b-2"])
    await expect(lane("repeat", "each iteration").locator("button.node")).to_contain_text(["again"])
    statuses = {
        name: await tree.locator(f'button.node[aria-label^="{name},"] .badge').inner_text()
        for name in ("start", "left", "approve-big", "auto", "in-a", "in-b", "again")
    }
    assert statuses == {
        "start": "completed",
        "left": "completed",
        "approve-big": "not run",
        "auto": "completed",
        "in-a": "not run",
        "in-b": "completed",
        "again": "completed",
    }
    top = await tree.locator(":scope > li > button.node .node-name").all_inner_texts()
    assert top == ["start", "fan", "big?", "pick", "repeat"]
    await console.shoot("run-tree")
    await console.check_accessible()


async def test_a_node_that_ran_many_times_shows_its_latest_runs_first(console: Console) -> None:
    p = console.platform
    wf, run_id = await start(p, [loop("repeat", echo("again"), max_iterations=25)])
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed"
    [repeat] = [n for n in run["nodeRuns"] if n["nodeName"] == "repeat"]
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator("dl.facts").first).to_contain_text("26 (26 completed)")
    await page.locator('button.node[data-node-id="again"]').click()
    detail = page.locator("#node-detail")
    await expect(detail).to_contain_text("The latest 20 of 25 node runs, newest first.")
    runs = detail.locator(".node-run")
    await expect(runs).to_have_count(20)
    await expect(runs.first).to_have_attribute("data-node-run-id", f"{run_id}.again.25")
    await expect(runs.last).to_have_attribute("data-node-run-id", f"{run_id}.again.6")
    # Each card says which iteration (0-based) it ran in, inside the loop's node run.
    facts = runs.first.locator("dl.facts > div")
    await expect(facts.filter(has_text="Iteration").locator("dd")).to_have_text("24")
    await expect(facts.filter(has_text="Inside").locator("dd")).to_have_text(repeat["id"])
    await expect(facts.filter(has_text="Item")).to_have_count(0)


async def test_a_busy_runs_counts_move_while_its_events_never_pause(console: Console) -> None:
    # A refresh waited for the events to pause 200 ms: a run whose events never paused
    # showed the counts it had when the page opened until it ended.
    p = console.platform
    nodes = [
        echo("go", {"requiresConfirmation": True}),
        loop("busy", delay("tick", 0.05), max_iterations=60),
    ]
    wf, run_id = await console.at_gate(nodes, "go")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    counts = page.locator("dl.facts div").filter(has_text="Node runs").locator("dd")
    await expect(counts).to_contain_text("awaiting")
    assert (await approve(p, wf, run_id, stepId="go", resolution="confirm")).status_code == 200
    detail = f"/api/v1/workflows/{wf}/runs/{run_id}?nodeRuns=summary"
    seen: list[str] = []
    while (await p.api.get(detail)).json()["status"] == "running":
        text = await counts.text_content()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        await page.wait_for_timeout(100)
    # About 4 s of events 30-60 ms apart: a refresh at least every second shows several.
    assert len(seen) >= 3, seen


async def test_a_retry_sent_again_after_its_answer_was_lost_starts_one_child(
    console: Console,
) -> None:
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    await p.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
    await p.wait(wf, run_id)
    page = console.page
    keys: list[str | None] = []

    await page.route("**/retry", first_answer_lost(keys))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await confirm(console, "retry")
    await expect(page.get_by_role("alert").filter(has_text="Retry refused")).to_be_visible()
    await confirm(console, "retry")
    notice = page.get_by_role("status").filter(has_text="Retry: started run")
    await expect(notice).to_be_visible()
    children = (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}/children")).json()
    assert len(children["runs"]) == 1, children
    assert keys[0] and keys[0] == keys[1], keys


async def test_a_long_line_in_an_output_scrolls_in_its_box_not_the_page(console: Console) -> None:
    # A gate's "Output so far" and a node run's snapshot hold whatever a step returned; a
    # line of it wider than the screen must not make the whole page scroll sideways.
    review = {"requiresIterationReview": True, "iterationReviewMessage": "Another round?"}
    nodes = [loop("lp", echo("body", line="x" * 300), id="lp", humanReview=review)]
    wf, run_id = await console.at_gate(nodes, "lp")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.get_by_text("Output so far")).to_be_visible()
    await page.locator('button.node[data-node-id="body"]').click()
    await page.locator("#node-detail").get_by_text("Output snapshot").click()
    await expect(page.locator("#node-detail details[open] pre.json")).to_contain_text("x" * 300)
    await console.shoot("run-long-output")  # fails when the page is wider than 390 px
    wide = await page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"the page is {wide}px wider than the window at 1280 px"


async def test_a_long_unbroken_message_or_error_wraps_inside_its_card(console: Console) -> None:
    # A gate's message and a failed run's error are the author's or the step's text: one
    # holding a long URL made the inbox and the run page thousands of pixels wide.
    url = "https://example.com/orders/" + "x" * 400
    wf, run_id = await console.at_gate(confirm_gate(f"Check {url} first"), "ship")
    page = console.page
    await console.goto("/console/")
    await expect(page.locator(".gate .message")).to_contain_text(url)
    await console.shoot("inbox-long-message")  # fails when the page is wider than 390 px
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator(".gate .message")).to_contain_text(url)
    await console.shoot("run-long-message")
    failing = [step("fetch", "builtin:transform", {"map": {"v": "input.no_such_" + "k" * 300}})]
    wf, run_id = await start(console.platform, failing)
    assert (await console.platform.wait(wf, run_id))["status"] == "failed"
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator(".notice-error").first).to_contain_text("no_such_")
    await console.shoot("run-long-error")


async def test_a_run_page_says_when_its_live_stream_is_lost_and_when_it_is_back(
    console: Console,
) -> None:
    # With the API gone it went on saying "Live: …" over a state that had stopped moving.
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await page.route("**/events", lambda route: route.abort())
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    state = page.locator("[data-role=live-state]")
    await expect(state).to_contain_text("Live updates paused")
    await page.unroute("**/events")
    await expect(state).to_have_text(re.compile("^Live: node statuses"), timeout=15_000)
    await approve(console.platform, wf, run_id, stepId="ship", resolution="confirm")
    badge = page.locator("[data-role=run-status] .badge")
    await expect(badge).to_have_text("completed", timeout=15_000)
    # Finished, it no longer says "Live: node statuses change as the run goes".
    await expect(state).to_have_text(re.compile("^The run has ended"), timeout=15_000)


async def test_a_run_page_opened_on_a_finished_run_does_not_follow_its_stream(
    console: Console,
) -> None:
    # It read the whole event log first: a loop's 40,004 events (14 MB) took 10 s to say
    # "The run has ended", which the run's detail said from the start.
    p = console.platform
    wf, run_id = await start(p, [loop("repeat", echo("again"), max_iterations=3)])
    assert (await p.wait(wf, run_id))["status"] == "completed"
    page = console.page
    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if r.url.endswith("/events") else None)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator("[data-role=live-state]")).to_have_text(
        re.compile("^The run has ended")
    )
    node = page.locator('button.node[data-node-id="again"]')
    await expect(node).to_have_attribute("aria-label", "again, step, builtin:echo: completed")
    assert streams == [], "a finished run's event stream was read"


async def test_a_run_that_ends_between_the_pages_two_reads_shows_its_end(
    console: Console,
) -> None:
    # Its graph read while it ran, its detail once it had ended: the page, following no
    # stream, kept the graph's statuses (a completed run with a step running).
    p = console.platform
    wf, run_id = await start(p, [echo("again")])
    assert (await p.wait(wf, run_id))["status"] == "completed"
    page = console.page
    graphs = 0

    async def as_while_running(route: Route) -> None:
        nonlocal graphs
        graphs += 1
        if graphs > 1:
            return await route.continue_()
        graph = await (await route.fetch()).json()
        graph["status"] = "running"
        for node in graph["nodes"]:
            node["status"] = "running"
        await route.fulfill(json=graph)

    await page.route("**/graph", as_while_running)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    node = page.locator('button.node[data-node-id="again"]')
    await expect(node).to_have_attribute("aria-label", "again, step, builtin:echo: completed")
    assert graphs == 2


async def test_a_run_page_whose_stream_answers_404_says_it_stopped_following(
    console: Console,
) -> None:
    # A stream answering 404 (the run deleted, access withdrawn) is not retried; the line
    # said "Live updates paused … Trying again" for good.
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await page.route("**/events", lambda route: route.fulfill(status=404, body="{}"))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    state = page.locator("[data-role=live-state]")
    await expect(state).to_contain_text("Live updates stopped: this run is no longer available")


async def test_a_running_runs_page_follows_its_stream_after_what_the_graph_shows(
    console: Console,
) -> None:
    # It read the run's whole log from its first event: a long loop's 40,004 events
    # (14 MB) before the page was live.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    for n in range(50):  # a log longer than what the page needs
        await p.store.append_event(run_id, {"type": "note", "runId": run_id, "n": n})
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    newest = (await p.api.get(f"{base}/graph")).json()["lastEventId"]
    page = console.page
    asked: list[str | None] = []
    page.on(
        "request",
        lambda r: (
            asked.append(r.headers.get("last-event-id")) if r.url.endswith("/events") else None
        ),
    )
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator(".gate")).to_have_count(1)
    await eventually(lambda: asked)  # the stream is asked for after the page is drawn
    assert asked[:1] == [str(newest)]
    # Live still: the decision made elsewhere comes as the events after it.
    assert (await approve(p, wf, run_id, stepId="ship", resolution="confirm")).status_code == 200
    await expect(page.locator("[data-role=live-state]")).to_have_text(
        re.compile("^The run has ended"), timeout=LIVE
    )
    await expect(page.locator(".gate")).to_have_count(0)


async def test_a_run_page_whose_workflow_is_deleted_says_the_run_is_gone(
    console: Console,
) -> None:
    # The delete cancels the run, so its stream ended with `run_cancelled`: the page said
    # "The run has ended" and offered Retry and Replay for a run the API answered 404 for.
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await expect(page.locator(".gate")).to_have_count(1)
    assert (await p.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
    state = page.locator("[data-role=live-state]")
    await expect(state).to_contain_text(
        "Live updates stopped: this run is no longer available", timeout=LIVE
    )
    for action in ("pause", "resume", "cancel", "retry", "replay"):
        await expect(page.locator(f"button[data-action={action}]")).to_be_disabled()
    await expect(page.locator(".gate")).to_have_count(0)


async def test_a_pause_goes_under_an_idempotency_key(console: Console) -> None:
    # Sent without one, a pause whose answer was lost could not be sent again as the same
    # request: a repeat was a 409 ("Run is paused"), someone else's pause as far as the
    # page could tell. The key is kept while the answer is lost (as retry's is).
    p = console.platform
    wf, run_id = await console.at_gate(confirm_gate(), "ship")
    page = console.page
    keys: list[str | None] = []
    await page.route("**/pause", first_answer_lost(keys))
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await confirm(console, "pause")
    await expect(page.get_by_role("alert").filter(has_text="Pause refused")).to_be_visible()
    await p.wait(wf, run_id, {"paused"})
    await expect(page.locator('button[data-action="pause"]')).to_be_disabled(timeout=15_000)
    assert keys and keys[0], keys
    events = await p.store.list_events(run_id, 0, 100)
    assert [e["type"] for e in events].count("run_paused") == 1
