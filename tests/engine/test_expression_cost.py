"""An expression too costly to evaluate fails its node quickly; it never holds the run."""

from __future__ import annotations

import time
from typing import Any

import pytest

from activities import run_start
from tests.builders import condition, echo, parallel, step, transform
from tests.support.platform import Platform

# 100^3 = 10^6 evaluations of the innermost body: far past the budget, accepted at save
# (the lists' sizes are only known at run time).
COSTLY = "input.l.exists(a, input.l.exists(b, input.l.exists(c, a + b + c < 0)))"


async def test_an_over_budget_condition_fails_its_node_within_seconds(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fifth of the budget (started runs carry theirs): the default's 10,000 steps took
    # 0.3 s here, and over Temporal's 2 s on a machine loaded far past its two cores,
    # which the SDK takes for a deadlock (the run was stuck, the worker's shutdown hung).
    monkeypatch.setattr(run_start, "EVALUATION_STEPS", 2_000)
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
    assert "stopped: it needs more than 2000 steps" in run["errorSummary"]
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


# About 8,800 steps over a 16-element list: one fits an evaluation's budget (10,000).
PAIRS = "input.l.exists(a, input.l.exists(b, a + b < 0))"
# The test's runs share less per task than the product's (run_start.MAX_TASK_STEPS, 50,000):
# the task that spends it must stay inside Temporal's 2 s on a machine as loaded as the
# whole suite makes it. Past that the SDK interrupts the task, the workflow cannot be
# evicted after it, and the worker's shutdown (this test's teardown) waits for ever.
TEST_TASK_STEPS = 20_000


async def test_costly_configs_ready_at_once_share_one_workflow_task_budget(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four branches' steps render their configs in the same workflow task; were each given
    # its own budget, the task would run four evaluations' time and could be retried as
    # deadlocked for ever. Together they fail the run instead, clearly: each fits alone.
    monkeypatch.setattr(run_start, "MAX_TASK_STEPS", TEST_TASK_STEPS)
    branches = [
        step(f"d{i}", "builtin:delay", {"seconds": 0, "pairs": f"{{{{ {PAIRS} }}}}"}, id=f"d{i}")
        for i in range(4)
    ]
    started = time.monotonic()
    run = await platform.run({"nodes": [parallel("fan", *branches)]}, {"l": list(range(16))})
    assert time.monotonic() - started < 30
    assert run["status"] == "failed"
    assert f"together need more than {TEST_TASK_STEPS} steps" in run["errorSummary"], run[
        "errorSummary"
    ]
    statuses = {n["nodeId"]: n["status"] for n in run["nodeRuns"]}
    assert "failed" in {statuses.get(f"d{i}") for i in range(4)}, statuses


async def test_costly_conditions_ready_at_once_wait_for_a_fresh_share(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Containers' expressions end the activation once the task's share has less left than
    # one evaluation may take (inline_slices.CONTAINER_SLICE_PATCH): the third condition
    # waits for the run's queued writes and draws on a fresh share. Before, it failed the
    # run on the share.
    monkeypatch.setattr(run_start, "MAX_TASK_STEPS", TEST_TASK_STEPS)
    branches = [
        condition(f"c{i}", PAIRS, echo(f"t{i}"), id=f"c{i}", falseSteps=[echo(f"f{i}")])
        for i in range(4)
    ]
    fan = parallel("fan", *branches, id="fan")
    run = await platform.run({"nodes": [fan]}, {"l": list(range(16))})
    assert run["status"] == "completed", run["errorSummary"]
    statuses = {n["nodeId"]: n["status"] for n in run["nodeRuns"]}
    assert statuses == {"fan": "completed"} | {
        f"{name}{i}": "completed" for i in range(4) for name in ("c", "f")
    }


async def test_one_such_condition_alone_fits_its_task(platform: Platform) -> None:
    only = condition("c", PAIRS, echo("t"), id="c", falseSteps=[echo("f")])
    run = await platform.run({"nodes": [only]}, {"l": list(range(16))})
    assert run["status"] == "completed", run.get("errorSummary")
    assert [n["nodeId"] for n in run["nodeRuns"]] == ["c", "f"]


async def test_a_config_copying_one_input_string_a_thousand_times_fails_its_step_quickly(
    platform: Platform,
) -> None:
    """Cheap to evaluate (the string is shared), gigabytes to copy out: the result's size is
    charged, so the step fails with the budget's message instead of holding the workflow
    task (a deadlock Temporal retries for ever) while the worker's memory grows."""
    bomb = "{{ input.l.map(a, input.l.map(b, input.l.map(c, input.s))) }}"
    workflow_id = await platform.create(
        {
            "nodes": [
                {
                    "name": "S",
                    "nodeType": "step",
                    "executorKey": "builtin:echo",
                    "config": {"x": bomb},
                }
            ]
        }
    )
    started = time.monotonic()
    run_id = await platform.trigger(workflow_id, {"l": list(range(10)), "s": "a" * 200_000})
    run = await platform.wait(workflow_id, run_id, within=15)
    assert time.monotonic() - started < 15
    assert run["status"] == "failed", run
    assert "stopped: it needs more than 10000 steps" in run["errorSummary"]


SIZE_OF_XS = {
    "nodes": [
        {
            "name": "count",
            "nodeType": "step",
            "executorKey": "builtin:transform",
            "config": {"map": {"n": "size(input.xs)"}},
        }
    ]
}


async def test_a_variable_too_big_to_convert_fails_its_node_and_never_holds_the_run(
    platform: Platform,
) -> None:
    """cel-python converts a variable whole before the expression reads it: 300,000 numbers
    held the workflow task 2 s, the SDK took it for deadlocked and retried it for ever (the
    run stayed pending and a cancel never reached it). Now the conversion is paid for. An
    input holds at most 100,000 values: three echoes of 80,000 make the earlier outputs a
    variable of 240,000."""
    echoes = [
        {"name": f"e{i}", "nodeType": "step", "executorKey": "builtin:echo"} for i in range(3)
    ]
    count_them = {
        "name": "count",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"n": "size(previous_step_outputs)"}},
    }
    workflow_id = await platform.create({"nodes": [*echoes, count_them]})
    run_id = await platform.trigger(workflow_id, {"xs": [0] * 80_000})
    run = await platform.wait(workflow_id, run_id, within=30)
    assert run["status"] == "failed", run["status"]
    stopped = (
        "stopped: converting previous_step_outputs for it: the expressions evaluated in one "
        "workflow task together need more than 50000 steps"
    )
    assert stopped in run["errorSummary"], run["errorSummary"]
    count = next(n for n in run["nodeRuns"] if n["nodeName"] == "count")
    assert count["status"] == "failed" and "converting previous_step_outputs" in count["error"]


async def test_a_variable_within_the_budget_is_converted_as_before(platform: Platform) -> None:
    run = await platform.run(SIZE_OF_XS, {"xs": [0] * 20_000})
    assert run["status"] == "completed", run.get("errorSummary")
    assert run["finalOutput"] == {"n": 20_000}


def _many_ones(count: int) -> dict[str, Any]:
    config = {f"k{i}": "{{ 1 }}" for i in range(count)}
    return {
        "nodes": [
            {"name": "s", "nodeType": "step", "executorKey": "builtin:echo", "config": config}
        ]
    }


async def test_a_config_whose_templates_together_cannot_fit_is_refused_at_save(
    platform: Platform,
) -> None:
    # Twelve thousand `{{ 1 }}` saved, and every run failed on the config's one budget.
    refused = await platform.api.post("/api/v1/workflows", json={"name": "n", **_many_ones(1200)})
    assert refused.status_code == 400, refused.text
    assert "its templates together take at least 24000 steps" in refused.text
    # What save lets through renders within the budget.
    run = await platform.run(_many_ones(450))
    assert run["status"] == "completed", run.get("errorSummary")
    assert run["finalOutput"]["config"]["k449"] == 1


def _costly_echo(i: int, **fields: Any) -> dict[str, Any]:
    """An echo step whose config is one template of its own, of about 4,000 syntax-tree
    nodes (a 400-element list literal): about 4,000 steps to evaluate, as many to compile."""
    ones = ",".join(["1"] * 400)
    return step(
        f"e{i}", "builtin:echo", {"n": f"{{{{ size([{ones},{i}]) }}}}"}, id=f"e{i}", **fields
    )


async def test_compiling_a_config_is_paid_from_the_workflow_tasks_share(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling ran uncharged inside the workflow task: an outside audit's 400 branches of
    distinct long templates held the first task past 2 s, the worker could not evict the
    run and it stayed `running` for good. Now compiling is paid too: this config's
    evaluating alone fits a 6,000-step share; with its compiling it does not."""
    monkeypatch.setattr(run_start, "MAX_TASK_STEPS", 6_000)
    remote = _costly_echo(0) | {"executorKey": "builtin:delay"}
    remote["config"]["seconds"] = 0
    run = await platform.run({"nodes": [remote]})
    assert run["status"] == "failed", run
    stopped = "stopped: compiling it: the expressions evaluated in one workflow task together"
    assert stopped in run["errorSummary"], run["errorSummary"]


async def test_branches_compiling_costly_templates_wait_for_a_fresh_share(
    platform: Platform,
) -> None:
    """Inline steps end their activation once the share cannot pay for one more evaluation
    and its compiling: six such branches take three slices (one, before compiling was paid)."""
    branches = [_costly_echo(i) for i in range(6)]
    run = await platform.run({"nodes": [parallel("fan", *branches, id="fan", maxConcurrency=6)]})
    assert run["status"] == "completed", run.get("errorSummary")
    outputs = [n["outputSnapshot"]["config"]["n"] for n in run["nodeRuns"] if n["nodeId"] != "fan"]
    assert outputs == [401] * 6
    history = await platform.client.get_workflow_handle(run["id"]).fetch_history()
    writes = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    assert len(writes) >= 3, [e.event_type for e in history.events]


async def test_a_definition_holding_too_much_cel_is_refused_before_any_is_parsed(
    platform: Platform,
) -> None:
    """All the CEL of a definition is bounded (100,000 characters): 400 templates of 4,000
    characters took a minute to check, and every other save waited for it."""
    listed = (await platform.api.get("/api/v1/workflows")).json()["pagination"]["total"]
    padded = "{{ size('" + "p" * 3_980 + "') }}"
    steps = [echo(f"s{i}", n=padded) for i in range(26)]
    refused = await platform.api.post("/api/v1/workflows", json={"name": "n", "nodes": steps})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    held = 26 * len(padded[3:-3])
    assert (
        f"nodes: its CEL expressions hold {held} characters together; at most 100000"
        in (error["message"])
    )
    assert (await platform.api.get("/api/v1/workflows")).json()["pagination"]["total"] == listed
    saved = await platform.api.post("/api/v1/workflows", json={"name": "n", "nodes": steps[:25]})
    assert saved.status_code == 201, saved.text


async def test_a_definition_saved_with_longer_expressions_still_reads_and_runs(
    platform: Platform,
) -> None:
    """Templates and transform maps were not held to the 4,000 characters before: such a
    definition still reads and runs; only saving it again is refused, changing nothing."""
    long = "size('" + "p" * 4_100 + "')"
    workflow_id = await platform.create({"nodes": [transform("t", n="1"), echo("e")]})
    stored = await platform.store.get_workflow(workflow_id)
    assert stored is not None
    t, e = stored.nodes
    older = stored.model_copy(
        update={
            "nodes": [
                t.model_copy(update={"config": {"map": {"n": long}}}),
                e.model_copy(update={"config": {"n": "{{ " + long + " }}"}}),
            ],
            "version": stored.version + 1,
        }
    )
    await platform.store.update_workflow(older, new_version=True, read=stored)
    shown = await platform.api.get(f"/api/v1/workflows/{workflow_id}")
    assert shown.status_code == 200 and shown.json()["nodes"][0]["config"]["map"]["n"] == long
    run = await platform.wait(workflow_id, await platform.trigger(workflow_id))
    assert run["status"] == "completed", run.get("errorSummary")
    assert run["finalOutput"]["config"]["n"] == 4_100
    body = {k: v for k, v in shown.json().items() if k in ("name", "nodes")}
    again = await platform.api.put(f"/api/v1/workflows/{workflow_id}", json=body)
    assert again.status_code == 400, again.text
    assert "config.map.n: CEL expression is 4108 characters long" in again.text
    after = await platform.api.get(f"/api/v1/workflows/{workflow_id}")
    assert after.json()["version"] == shown.json()["version"]
