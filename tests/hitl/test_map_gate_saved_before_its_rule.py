"""A map whose items wait at one gate at once: a definition saved before the rule that a
gate inside a map needs maxConcurrency 1 (docs/operations.md, older definitions). Its runs
must still be decided: the first decision took the gate away from the other items, whose
every workflow task then failed, and the run waited for good."""

from __future__ import annotations

import asyncio

from tests.builders import node, step
from tests.hitl.helpers import approve, wait_for_gate
from tests.support.platform import Platform

GATED = step("Check", "builtin:echo", id="check", humanReview={"requiresConfirmation": True})
MAP = node("Items", "map", id="items", itemsCel="input.items", maxConcurrency=1, children=[GATED])


async def saved_by_an_older_release(p: Platform, concurrency: int) -> str:
    """A valid map made as an older release saved it: its items at the gate at once."""
    workflow_id = await p.create({"nodes": [MAP]})
    stored = await p.store.get_workflow(workflow_id)
    assert stored is not None
    items = stored.nodes[0].model_copy(update={"max_concurrency": concurrency})
    older = stored.model_copy(update={"nodes": [items], "version": stored.version + 1})
    await p.store.update_workflow(older, new_version=True, read=stored)
    shown = (await p.api.get(f"/api/v1/workflows/{workflow_id}")).json()
    assert shown["nodes"][0]["maxConcurrency"] == concurrency
    return workflow_id


async def items_awaiting(p: Platform, workflow_id: str, run_id: str, count: int) -> None:
    for _ in range(200):
        run = (await p.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")).json()
        waiting = [n for n in run["nodeRuns"] if n["status"] == "awaiting_approval"]
        if len(waiting) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} items never waited at once: {run['nodeRuns']}")


async def test_one_decision_decides_every_item_waiting_at_the_gate(platform: Platform) -> None:
    workflow_id = await saved_by_an_older_release(platform, concurrency=3)
    run_id = await platform.trigger(workflow_id, {"items": [1, 2, 3, 4]})
    await wait_for_gate(platform, workflow_id, run_id, "check")
    await items_awaiting(platform, workflow_id, run_id, 3)

    first = await approve(platform, workflow_id, run_id, stepId="check", resolution="confirm")
    assert first.status_code == 200, first.text
    # The fourth item reached the gate after the decision: it waits for one of its own.
    await items_awaiting(platform, workflow_id, run_id, 1)
    second = await approve(platform, workflow_id, run_id, stepId="check", resolution="confirm")
    assert second.status_code == 200, second.text

    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run
    decided = [r for r in run["resolvedRequirements"] if r["stepId"] == "check"]
    assert len(decided) == 4 and all(r["resolution"] == "confirm" for r in decided), decided
    checks = [n for n in run["nodeRuns"] if n["nodeId"] == "check"]
    assert sorted(n["itemIndex"] for n in checks) == [0, 1, 2, 3]
    assert all(n["status"] == "completed" for n in checks), checks


async def test_each_item_waiting_at_the_gate_times_out_at_its_own_deadline(
    platform: Platform,
) -> None:
    """One item's gate timer decided the other items waiting at the gate before their own
    deadlines: each is decided by its own timer now."""
    delayed = step("Wait", "builtin:delay", {"seconds": "{{ item }}"}, id="wait")
    gate = step(
        "Check",
        "builtin:echo",
        id="check",
        humanReview={"requiresConfirmation": True, "timeoutSeconds": 2, "onTimeout": "approve"},
    )
    timed = node("Items", "map", id="items", itemsCel="input.items", maxConcurrency=1,
                 children=[delayed, gate])  # fmt: skip
    workflow_id = await platform.create({"nodes": [timed]})
    stored = await platform.store.get_workflow(workflow_id)
    assert stored is not None
    items = stored.nodes[0].model_copy(update={"max_concurrency": 2})
    older = stored.model_copy(update={"nodes": [items], "version": stored.version + 1})
    await platform.store.update_workflow(older, new_version=True, read=stored)

    run_id = await platform.trigger(workflow_id, {"items": [0, 2]})
    run = await platform.wait(workflow_id, run_id, within=20)
    assert run["status"] == "completed", run
    decided = [r for r in run["resolvedRequirements"] if r["stepId"] == "check"]
    assert len(decided) == 2 and {r["source"] for r in decided} == {"timeout"}, decided
    for requirement in decided:
        # Decided at its own deadline, not the other item's (a timer fires on the second).
        assert requirement["decidedAt"] >= requirement["timeoutAt"][:19], requirement
