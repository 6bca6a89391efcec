"""POST /approve under an Idempotency-Key: a repeat whose answer was lost decides nothing
again (a loop's next iteration review has the same stepId), even once the run has ended."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.builders import echo, transform
from tests.hitl.helpers import start, wait_for_gate, wait_for_requirement
from tests.support.platform import Platform

# A loop whose every iteration waits for a review: each opening of its gate has one stepId.
LOOPED = {
    "id": "loop",
    "name": "loop",
    "nodeType": "loop",
    "loopConfig": {"maxIterations": 3},
    "humanReview": {"requiresIterationReview": True, "onReject": "skip"},
    "children": [transform("tick", i="iteration")],
}


async def _approve(p: Platform, wf: str, run_id: str, key: str | None, **body: Any) -> Any:
    headers = {} if key is None else {"Idempotency-Key": key}
    url = f"/api/v1/workflows/{wf}/runs/{run_id}/approve"
    return await p.api.post(url, json=body, headers=headers)


async def test_a_repeat_under_the_key_does_not_decide_the_next_iteration(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [LOOPED])
    await wait_for_requirement(platform, wf, run_id, "loop", iteration=0)
    first = await _approve(platform, wf, run_id, "click-1", stepId="loop", resolution="confirm")
    assert first.status_code == 200, first.text
    await wait_for_requirement(platform, wf, run_id, "loop", iteration=1)

    again = await _approve(platform, wf, run_id, "click-1", stepId="loop", resolution="confirm")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    other = await _approve(platform, wf, run_id, "click-1", stepId="loop", resolution="reject")
    assert other.status_code == 409, other.text
    assert other.json()["error"]["code"] == "conflict"
    assert "Idempotency-Key was first used for another decision" in other.json()["error"]["message"]

    # Neither decided iteration 1: its review still waits, and one decision is recorded.
    await asyncio.sleep(0.5)
    run = await wait_for_requirement(platform, wf, run_id, "loop", iteration=1)
    assert len(run["resolvedRequirements"]) == 1
    assert run["pendingRequirements"][0]["confirmed"] is None


async def test_a_repeat_after_the_decision_ended_the_run_gets_the_first_answer(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "send")
    first = await _approve(platform, wf, run_id, "k-1", stepId="send", resolution="confirm")
    assert first.status_code == 200, first.text
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"

    again = await _approve(platform, wf, run_id, "k-1", stepId="send", resolution="confirm")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    # A new key, or none, asks for a new decision: the run has none to take.
    for key in ("k-2", None):
        late = await _approve(platform, wf, run_id, key, stepId="send", resolution="confirm")
        assert late.status_code == 409, late.text
    after = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert after["resolvedRequirements"] == run["resolvedRequirements"]


async def test_a_decision_naming_the_gate_it_saw_is_refused_once_another_is_open(
    platform: Platform,
) -> None:
    # A card drawn for a loop's iteration 0, pressed after someone else continued it,
    # decided iteration 1, which nobody had seen (found by an audit of the console).
    wf, run_id = await start(platform, [LOOPED])
    run = await wait_for_requirement(platform, wf, run_id, "loop", iteration=0)
    shown = run["pendingRequirements"][0]
    seen = {k: shown[k] for k in ("nodeRunId", "iteration", "itemIndex", "kind")}
    assert seen["iteration"] == 0 and seen["nodeRunId"], seen
    first = await _approve(platform, wf, run_id, None, stepId="loop", resolution="confirm")
    assert first.status_code == 200, first.text
    await wait_for_requirement(platform, wf, run_id, "loop", iteration=1)

    for key in (None, "stale-card"):
        late = await _approve(
            platform, wf, run_id, key, stepId="loop", resolution="confirm", gate=seen
        )
        assert late.status_code == 409, (key, late.text)
        assert late.json()["error"]["code"] == "conflict"
    keyless = await _approve(
        platform, wf, run_id, None, stepId="loop", resolution="reject", gate=seen
    )
    assert keyless.json()["error"]["message"] == (
        f"The gate of step 'loop' that was seen (node run {seen['nodeRunId']}, iteration 0, "
        f"iteration review) was decided already; another is open now (node run "
        f"{seen['nodeRunId']}, iteration 1, iteration review): read the run again"
    )
    await asyncio.sleep(0.5)
    run = await wait_for_requirement(platform, wf, run_id, "loop", iteration=1)
    assert len(run["resolvedRequirements"]) == 1
    # The gate open now, named, is decided.
    now = {**seen, "iteration": 1}
    current = await _approve(
        platform, wf, run_id, None, stepId="loop", resolution="confirm", gate=now
    )
    assert current.status_code == 200, current.text
    await wait_for_requirement(platform, wf, run_id, "loop", iteration=2)


async def test_a_gate_named_wrongly_is_400_and_decides_nothing(platform: Platform) -> None:
    wf, run_id = await start(platform, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "send")
    for gate in ({"iteration": 0}, {"nodeRunId": 5}, {"nodeRunId": "x", "kind": "after"}, "x"):
        sent = await _approve(
            platform, wf, run_id, None, stepId="send", resolution="confirm", gate=gate
        )
        assert sent.status_code == 400, (gate, sent.text)
        assert sent.json()["error"]["details"][0]["path"].startswith("gate"), sent.text
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["resolvedRequirements"] == [] and run["status"] == "awaiting_approval"
