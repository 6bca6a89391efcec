"""A run reset in Temporal goes on in a new execution, and the store follows it: the new
execution's writes take the run over from the old one's end, or from the reconciler's
correction of it, though their revs start again from the bottom."""

from __future__ import annotations

from typing import Any

from tests.builders import delay, echo
from tests.engine.test_reconciler import _terminated_visible
from tests.engine.test_reconciler_sources import (
    GATE,
    first_completed_task,
    reset_to_its_first_task,
)
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.reconciling import eager

NODES = [echo("g", GATE), delay("after", 0.1)]


async def waits_at_g_again(platform: Platform, wf: str, run_id: str) -> dict[str, Any]:
    """The run as the store shows it once the reset run waits at `g` again."""
    run = await platform.wait(wf, run_id, {"awaiting_approval"})
    assert [r["stepId"] for r in run["pendingRequirements"]] == ["g"], run
    assert (run["errorSummary"], run["finishedAt"], run["finalOutput"]) == (None, None, None)
    [gate] = [n for n in run["nodeRuns"] if n["nodeId"] == "g"]
    assert gate["status"] == "awaiting_approval" and gate["error"] is None, gate
    return run


async def approved_to_the_end(platform: Platform, wf: str, run_id: str) -> dict[str, Any]:
    decided = await approve(platform, wf, run_id, stepId="g", resolution="confirm")
    assert decided.status_code == 200, decided.text
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run
    assert run["errorSummary"] is None
    assert {n["nodeId"]: n["status"] for n in run["nodeRuns"]} == {
        "g": "completed",
        "after": "completed",
    }
    return run


async def test_a_terminated_run_reset_in_temporal_waits_at_its_gate_again_and_completes(
    platform: Platform,
) -> None:
    # The reconciler's `failed` (at a rev above every workflow write) stayed for good:
    # the reset run's gate was not shown, its approval was a 409, its end was dropped.
    wf, run_id = await start(platform, NODES)
    await wait_for_gate(platform, wf, run_id, "g")
    # Terminated before the task that opened the gate completed, there is nothing to reset to.
    await eventually(lambda: first_completed_task(platform, run_id))
    await platform.client.get_workflow_handle(run_id).terminate(reason="x")
    await eventually(lambda: _terminated_visible(platform, run_id), within=10)
    reconciler = eager(platform)
    assert run_id in await reconciler.reconcile_once()
    failed = await platform.wait(wf, run_id)
    assert failed["errorSummary"] == "Terminated in Temporal: x"

    await reset_to_its_first_task(platform, run_id)

    await waits_at_g_again(platform, wf, run_id)
    # The terminated execution still matches the reconciler's query: not its run's end.
    assert run_id not in await reconciler.reconcile_once()
    await approved_to_the_end(platform, wf, run_id)
    assert run_id not in await reconciler.reconcile_once()
    assert (await platform.wait(wf, run_id))["status"] == "completed"


async def test_a_completed_run_reset_in_temporal_waits_at_its_gate_again_and_completes(
    platform: Platform,
) -> None:
    # Its end (final, at the top of the workflow's revs) kept the run `completed` while
    # Temporal waited at the gate again, and a decision was a 409.
    wf, run_id = await start(platform, NODES)
    await wait_for_gate(platform, wf, run_id, "g")
    await approved_to_the_end(platform, wf, run_id)

    await reset_to_its_first_task(platform, run_id)

    await waits_at_g_again(platform, wf, run_id)
    run = await approved_to_the_end(platform, wf, run_id)
    assert run["finalOutput"] is not None
    events = [e["type"] for e in await platform.store.list_events(run_id, 0, 1000)]
    assert events.count("run_completed") == 2, events


async def test_a_run_reset_at_a_later_gate_shows_the_gate_it_waits_at_again(
    platform: Platform,
) -> None:
    # Reset while open: the old execution's higher revs hid the new one's writes, so the
    # store showed the later gate, whose approval Temporal refused.
    wf, run_id = await start(platform, [echo("g", GATE), echo("later", GATE)])
    await wait_for_gate(platform, wf, run_id, "g")
    decided = await approve(platform, wf, run_id, stepId="g", resolution="confirm")
    assert decided.status_code == 200, decided.text
    await wait_for_gate(platform, wf, run_id, "later")

    await reset_to_its_first_task(platform, run_id)

    async def at_g() -> dict[str, Any] | None:
        run = await wait_for_gate(platform, wf, run_id, "g")
        return run if [r["stepId"] for r in run["pendingRequirements"]] == ["g"] else None

    await eventually(at_g, within=10)
    decided = await approve(platform, wf, run_id, stepId="g", resolution="confirm")
    assert decided.status_code == 200, decided.text
