"""An expression too costly to evaluate fails its node quickly; it never holds the run."""

from __future__ import annotations

import time

from tests.support.platform import Platform

# 100^3 = 10^6 evaluations of the innermost body: far past the budget, accepted at save
# (the lists' sizes are only known at run time).
COSTLY = "input.l.exists(a, input.l.exists(b, input.l.exists(c, a + b + c < 0)))"


async def test_an_over_budget_condition_fails_its_node_within_seconds(platform: Platform) -> None:
    workflow_id = await platform.create(
        {
            "nodes": [
                {
                    "name": "gate",
                    "nodeType": "condition",
                    "conditionCel": COSTLY,
                    "trueSteps": [{"name": "t", "nodeType": "step", "executorKey": "builtin:echo"}],
                }
            ]
        }
    )
    started = time.monotonic()
    run_id = await platform.trigger(workflow_id, {"l": list(range(100))})
    run = await platform.wait(workflow_id, run_id, within=15)
    assert time.monotonic() - started < 15
    assert run["status"] == "failed"
    assert run["errorSummary"].startswith("Node 'gate' failed: CEL evaluation of")
    assert "stopped: it needs more than 50000 steps" in run["errorSummary"]
    [gate] = run["nodeRuns"]
    assert gate["status"] == "failed"
    assert "stopped" in gate["error"]


async def test_the_same_condition_over_small_lists_completes(platform: Platform) -> None:
    run = await platform.run(
        {
            "nodes": [
                {
                    "name": "gate",
                    "nodeType": "condition",
                    "conditionCel": COSTLY,
                    "trueSteps": [{"name": "t", "nodeType": "step", "executorKey": "builtin:echo"}],
                    "falseSteps": [
                        {"name": "f", "nodeType": "step", "executorKey": "builtin:echo"}
                    ],
                }
            ]
        },
        {"l": list(range(5))},
    )
    assert run["status"] == "completed", run.get("errorSummary")
    assert run["nodeRuns"][0]["inputSnapshot"]["branch"] == "falseSteps"
