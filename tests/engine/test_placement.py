"""Node runs inside a container show where they sit: `parentNodeRunId` (the container's
node run), `itemIndex` (the innermost map's item) and `iteration` (the innermost loop's),
null at the top level."""

from __future__ import annotations

from typing import Any

from tests.support.continuing import start_continuing
from tests.support.platform import Platform

PLACEMENT = ("parentNodeRunId", "itemIndex", "iteration")


def _step(node_id: str, executor: str = "builtin:echo", **config: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "step",
        "executorKey": executor,
        "config": config,
    }


def _runs_of(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [n for n in run["nodeRuns"] if n["nodeName"] == name]


def _placed(node_run: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(node_run[key] for key in PLACEMENT)


async def test_a_maps_children_name_their_item_and_the_maps_node_run(platform: Platform) -> None:
    node = {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": "input.items",
        # An inline step and an activity step: both kinds of write carry the placement.
        "children": [_step("seen", value="{{ item }}"), _step("wait", "builtin:delay", seconds=0)],
    }
    items = ["a", "b", "c", "d"]
    run = await platform.run({"nodes": [_step("first"), node]}, {"items": items})
    assert run["status"] == "completed", run["errorSummary"]
    [first] = _runs_of(run, "first")
    [m] = _runs_of(run, "M")
    assert _placed(first) == _placed(m) == (None, None, None)
    for name in ("seen", "wait"):
        children = _runs_of(run, name)
        assert sorted(n["itemIndex"] for n in children) == [0, 1, 2, 3]
        assert {(n["parentNodeRunId"], n["iteration"]) for n in children} == {(m["id"], None)}
    for seen in _runs_of(run, "seen"):
        assert seen["inputSnapshot"]["value"] == items[seen["itemIndex"]]
    # The same fields through the node-run list and a node run's own detail.
    base = f"/api/v1/workflows/{run['workflowDefinitionId']}/runs/{run['id']}/nodes"
    listed = (await platform.api.get(base)).json()["nodeRuns"]
    assert {n["id"]: _placed(n) for n in listed} == {n["id"]: _placed(n) for n in run["nodeRuns"]}
    wait = _runs_of(run, "wait")[2]
    detail = (await platform.api.get(f"{base}/{wait['id']}")).json()
    assert _placed(detail) == _placed(wait)


async def test_loop_iterations_and_a_map_inside_them(platform: Platform) -> None:
    inner = {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": "[1, 2]",
        "children": [_step("leaf", "builtin:delay", seconds=0)],
    }
    loop = {
        "id": "L",
        "name": "L",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 3},
        "children": [_step("tick", i="{{ iteration }}"), inner],
    }
    run = await platform.run({"nodes": [loop, _step("after")]})
    assert run["status"] == "completed", run["errorSummary"]
    [lp] = _runs_of(run, "L")
    [after] = _runs_of(run, "after")
    assert _placed(lp) == _placed(after) == (None, None, None)
    ticks = _runs_of(run, "tick")
    assert [_placed(t) for t in ticks] == [(lp["id"], None, i) for i in range(3)]
    assert [t["inputSnapshot"]["i"] for t in ticks] == [0, 1, 2]
    maps = _runs_of(run, "M")
    assert [_placed(m) for m in maps] == [(lp["id"], None, i) for i in range(3)]
    # A map's children inside a loop name its item and the loop's iteration too.
    leaves = _runs_of(run, "leaf")
    assert sorted(_placed(leaf) for leaf in leaves) == sorted(
        (m["id"], index, m["iteration"]) for m in maps for index in (0, 1)
    )


async def test_children_of_containers_inside_a_map_in_a_loop_keep_item_and_iteration(
    platform: Platform,
) -> None:
    # A condition's or a parallel's children named only their container: the four runs
    # of "deep" (two items, two iterations) could be told apart only by walking the chain.
    condition = {
        "id": "C",
        "name": "C",
        "nodeType": "condition",
        "conditionCel": "true",
        "trueSteps": [_step("deep")],
    }
    parallel = {
        "id": "P",
        "name": "P",
        "nodeType": "parallel",
        "children": [_step("branch", "builtin:delay", seconds=0), _step("other")],
    }
    inner = {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": "['a', 'b']",
        "children": [condition, parallel],
    }
    loop = {
        "id": "L",
        "name": "L",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 2},
        "children": [inner],
    }
    run = await platform.run({"nodes": [loop]})
    assert run["status"] == "completed", run["errorSummary"]
    by_id = {n["id"]: n for n in run["nodeRuns"]}
    for name, container in (("deep", "C"), ("branch", "P"), ("C", "M"), ("P", "M")):
        runs = _runs_of(run, name)
        assert sorted((n["iteration"], n["itemIndex"]) for n in runs) == [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
        ], name
        for n in runs:
            assert by_id[n["parentNodeRunId"]]["nodeName"] == container
    for n in _runs_of(run, "deep"):
        parent = by_id[n["parentNodeRunId"]]
        assert (parent["iteration"], parent["itemIndex"]) == (n["iteration"], n["itemIndex"])


async def test_parallel_and_condition_children_name_their_container(platform: Platform) -> None:
    parallel = {
        "id": "P",
        "name": "P",
        "nodeType": "parallel",
        "children": [_step("left"), _step("right", "builtin:delay", seconds=0)],
    }
    condition = {
        "id": "C",
        "name": "C",
        "nodeType": "condition",
        "conditionCel": "true",
        "trueSteps": [_step("yes")],
    }
    run = await platform.run({"nodes": [parallel, condition]})
    assert run["status"] == "completed", run["errorSummary"]
    [p] = _runs_of(run, "P")
    [c] = _runs_of(run, "C")
    assert _placed(p) == _placed(c) == (None, None, None)
    for name in ("left", "right"):
        [child] = _runs_of(run, name)
        assert _placed(child) == (p["id"], None, None)
    [yes] = _runs_of(run, "yes")
    assert _placed(yes) == (c["id"], None, None)


async def test_a_top_level_loop_keeps_its_placement_across_continue_as_new(
    platform: Platform,
) -> None:
    # A top-level loop continues as new between iterations: its node run id and each
    # iteration's number come back from the loop's frame.
    loop = {
        "id": "L",
        "name": "L",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 12},
        "children": [_step("t", "builtin:delay", seconds=0, i="{{ iteration }}")],
    }
    wf = await start_continuing(platform, "run-placed-can", [loop], after_events=20)
    run = await platform.wait(wf, "run-placed-can", within=60)
    assert run["status"] == "completed", run["errorSummary"]
    [lp] = _runs_of(run, "L")
    ticks = _runs_of(run, "t")
    assert [_placed(t) for t in ticks] == [(lp["id"], None, i) for i in range(12)]
    assert [t["inputSnapshot"]["i"] for t in ticks] == list(range(12))
    executions = [e async for e in platform.client.list_workflows("WorkflowId = 'run-placed-can'")]
    assert len(executions) > 1
