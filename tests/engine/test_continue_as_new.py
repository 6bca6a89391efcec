"""Long runs continue as new at top-level boundaries, carrying their state, and finish.

The steps are remote (`builtin:delay`): inline built-ins add no history events.
"""

import json
from typing import Any

import pytest

from temporal_workflows.contracts import RunInput
from temporal_workflows.frames import MapFrame
from tests.support.continuing import start_continuing
from tests.support.platform import Platform
from tests.support.polling import eventually


async def _start(platform: Platform, run_id: str, nodes: list[dict[str, Any]]) -> str:
    return await start_continuing(
        platform, run_id, nodes, after_events=40, initial_input={"seed": 7}
    )


async def _finished(platform: Platform, run_id: str) -> Any:
    run = await platform.store.get_run(run_id)
    return run if run is not None and run.status in ("completed", "failed", "cancelled") else None


async def _executions(platform: Platform, run_id: str) -> int:
    return len([e async for e in platform.client.list_workflows(f"WorkflowId = '{run_id}'")])


async def test_a_long_top_level_loop_continues_as_new_and_completes(
    platform: Platform,
) -> None:
    wf = await _start(
        platform,
        "run-can-loop-1",
        [
            {
                "id": "L",
                "name": "L",
                "nodeType": "loop",
                "loopConfig": {"maxIterations": 60},
                "children": [
                    {
                        "id": "t",
                        "name": "tick",
                        "nodeType": "step",
                        "executorKey": "builtin:delay",
                        "config": {"i": "{{ iteration }}", "seconds": 0},
                    }
                ],
            },
            {
                "id": "after",
                "name": "after",
                "nodeType": "step",
                "executorKey": "builtin:transform",
                "config": {"map": {"n": "size(previous_step_content)", "seed": "input.seed"}},
            },
        ],
    )
    run = await platform.wait(wf, "run-can-loop-1", within=60)
    assert run["status"] == "completed", run
    assert run["finalOutput"] == {"n": 60, "seed": 7}
    loops = [n for n in run["nodeRuns"] if n["nodeName"] == "L"]
    assert len(loops) == 1 and loops[0]["status"] == "completed"
    assert loops[0]["inputSnapshot"] == {"iterations": 60, "endedBy": "maxIterations"}
    ticks = [n for n in run["nodeRuns"] if n["nodeName"] == "tick"]
    assert len(ticks) == 60 and len({n["id"] for n in ticks}) == 60
    assert [n["inputSnapshot"]["i"] for n in ticks] == list(range(60))
    assert await _executions(platform, "run-can-loop-1") > 1


async def test_a_long_sequence_carries_earlier_outputs_across(platform: Platform) -> None:
    steps = [
        {
            "id": f"s{i}",
            "name": f"s{i}",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"i": i, "seconds": 0},
        }
        for i in range(40)
    ]
    steps.append(
        {
            "id": "last",
            "name": "last",
            "nodeType": "step",
            "executorKey": "builtin:transform",
            "config": {"map": {"first": "previous_step_outputs.s0.sleptSeconds"}},
        }
    )
    wf = await _start(platform, "run-can-seq-1", steps)
    run = await platform.wait(wf, "run-can-seq-1", within=60)
    assert run["status"] == "completed", run
    assert run["finalOutput"] == {"first": 0.0}
    assert len(run["nodeRuns"]) == 41
    assert await _executions(platform, "run-can-seq-1") > 1


def _delay(node_id: str, **config: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "step",
        "executorKey": "builtin:delay",
        "config": {"seconds": 0, **config},
    }


def _loop(node_id: str, iterations: int, children: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "loop",
        "loopConfig": {"maxIterations": iterations},
        "children": children,
    }


def _steps_of(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [n for n in run["nodeRuns"] if n["nodeName"] == name]


async def test_a_loop_inside_a_parallel_branch_continues_as_new_and_completes(
    platform: Platform,
) -> None:
    inner = _loop("L", 40, [_delay("a", i="{{ iteration }}"), _delay("b")])
    fan = {
        "id": "P",
        "name": "P",
        "nodeType": "parallel",
        "children": [inner, _delay("side")],
    }
    after = {
        "id": "after",
        "name": "after",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {
            "map": {"n": "size(previous_step_outputs.L)", "side": "previous_step_outputs.side"}
        },
    }
    wf = await _start(platform, "run-can-nested-parallel", [fan, after])
    run = await platform.wait(wf, "run-can-nested-parallel", within=90)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {"n": 40, "side": {"sleptSeconds": 0.0}}
    a_runs = _steps_of(run, "a")
    assert [n["inputSnapshot"]["i"] for n in a_runs] == list(range(40))
    assert len(_steps_of(run, "b")) == 40
    assert all(n["status"] == "completed" for n in run["nodeRuns"])
    assert len({n["id"] for n in run["nodeRuns"]}) == len(run["nodeRuns"])
    assert [len(_steps_of(run, name)) for name in ("P", "L", "side")] == [1, 1, 1]
    assert await _executions(platform, "run-can-nested-parallel") > 2


async def test_loops_in_a_condition_and_in_a_loop_continue_as_new(platform: Platform) -> None:
    nested = _loop("outer", 3, [_loop("inner", 15, [_delay("t", o="{{ iteration }}")])])
    cond = {
        "id": "C",
        "name": "C",
        "nodeType": "condition",
        "conditionCel": "input.seed == 7",
        "trueSteps": [nested, _delay("tail")],
        "falseSteps": [_delay("never")],
    }
    wf = await _start(platform, "run-can-nested-condition", [cond])
    run = await platform.wait(wf, "run-can-nested-condition", within=90)
    assert run["status"] == "completed", run["errorSummary"]
    ticks = _steps_of(run, "t")
    assert len(ticks) == 45
    # Each tick saw the inner loop's iteration: 0..14, three times.
    assert [n["inputSnapshot"]["o"] for n in ticks] == list(range(15)) * 3
    outer = _steps_of(run, "outer")
    assert len(outer) == 1 and outer[0]["outputSnapshot"] is not None
    assert len(outer[0]["outputSnapshot"]) == 3
    assert [len(_steps_of(run, name)) for name in ("C", "inner", "tail", "never")] == [1, 3, 1, 0]
    assert await _executions(platform, "run-can-nested-condition") > 1


async def test_two_long_branches_both_park_and_continue_as_new_together(
    platform: Platform,
) -> None:
    fan = {
        "id": "P",
        "name": "P",
        "nodeType": "parallel",
        "children": [_loop("L1", 30, [_delay("x")]), _loop("L2", 30, [_delay("y")])],
    }
    wf = await _start(platform, "run-can-two-branches", [fan])
    run = await platform.wait(wf, "run-can-two-branches", within=90)
    assert run["status"] == "completed", run["errorSummary"]
    assert len(_steps_of(run, "x")) == 30 and len(_steps_of(run, "y")) == 30
    assert run["finalOutput"]["L1"] == [{"sleptSeconds": 0.0}] * 30
    assert await _executions(platform, "run-can-two-branches") > 1


async def _carried(platform: Platform, run_id: str) -> list[RunInput]:
    """The input of every execution of the run after its first (what each was carried)."""
    inputs: list[RunInput] = []
    async for execution in platform.client.list_workflows(f"WorkflowId = '{run_id}'"):
        handle = platform.client.get_workflow_handle(run_id, run_id=execution.run_id)
        started = (await handle.fetch_history()).events[0]
        payloads = started.workflow_execution_started_event_attributes.input.payloads
        [inp] = await platform.client.data_converter.decode(payloads, [RunInput])
        if inp.resume is not None:
            inputs.append(inp)
    return inputs


async def test_a_long_map_carries_its_list_about_once_not_once_per_item(
    platform: Platform,
) -> None:
    """Each branch carries only what it changed, not its copy of the step before's output:
    a map of 3,000 items over a 15 KB list carried 43.9 MB, and its restore deadlocked."""
    rows = [f"row-{i:03}-" + "x" * 58 for i in range(300)]
    listing = {
        "id": "list",
        "name": "list",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"rows": "input.rows"}},
    }
    each = {
        "id": "each",
        "name": "each",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"i": "index", "row": "item", "slept": "previous_step_content"}},
    }
    fan = {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": "previous_step_content.rows",
        "maxConcurrency": 20,
        "children": [_delay("a", i="{{ index }}"), each],
    }
    run_id = "run-can-long-map"
    wf = await start_continuing(
        platform, run_id, [listing, fan], after_events=400, initial_input={"rows": rows}
    )
    run = await platform.wait(wf, run_id, within=120)
    assert run["status"] == "completed", run["errorSummary"]
    slept = {"sleptSeconds": 0.0}
    assert run["finalOutput"] == [{"i": i, "row": r, "slept": slept} for i, r in enumerate(rows)]
    carried = await _carried(platform, run_id)
    assert len(carried) > 2
    # The list three times (the step's output and previous_step_content, the map's items)
    # and each item's own data, not a copy of the list per item.
    size = len(json.dumps(rows))
    largest = max(len(inp.resume.model_dump_json()) for inp in carried if inp.resume)
    assert largest < 4 * size + 300 * 1000, (largest, size)
    for inp in carried:
        assert inp.resume is not None and inp.resume.position is not None
        frame = inp.resume.position.inside
        assert isinstance(frame, MapFrame) and frame.items == rows
        scopes = [b.scope.model_dump_json() for b in frame.branches if b.scope is not None]
        assert scopes and max(len(s) for s in scopes) < 1000


@pytest.mark.long
async def test_five_thousand_iterations_nested_two_levels_deep_complete_as_one_run(
    platform: Platform,
) -> None:
    """The issue's long run: a loop inside a parallel branch, 5,000 iterations of 2 steps."""
    # One step is an activity, one is evaluated inline (both are node runs).
    echo = {
        "id": "b",
        "name": "b",
        "nodeType": "step",
        "executorKey": "builtin:echo",
        "config": {"i": "{{ iteration }}"},
    }
    loop = _loop("L", 5000, [_delay("a", i="{{ iteration }}"), echo])
    fan = {"id": "P", "name": "P", "nodeType": "parallel", "children": [loop, _delay("side")]}
    run_id = "run-can-five-thousand"
    # The default thresholds: continue as new past 10,000 events (or when Temporal suggests).
    wf = await start_continuing(platform, run_id, [fan], after_events=None)
    # Polled cheaply (the run detail of a long run lists thousands of node runs).
    finished = await eventually(lambda: _finished(platform, run_id), within=900, every=1.0)
    assert finished.status == "completed", finished.error_summary
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert len(run["finalOutput"]["L"]) == 5000
    a_runs = [n for n in run["nodeRuns"] if n["nodeName"] == "a"]
    assert [n["inputSnapshot"]["i"] for n in a_runs] == list(range(5000))
    assert len(run["nodeRuns"]) == 2 + 10_000 + 1
    assert all(n["status"] == "completed" for n in run["nodeRuns"])
    runs, total = await platform.store.list_runs(wf)
    assert total == 1 and runs[0].id == run_id
    assert await _executions(platform, run_id) > 1
