"""The map node: its children run once per item of a CEL list, bounded, results in item order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio.api.enums.v1 import EventType

from temporal_workflows.outbox import FLUSH_AT_WRITES
from tests.support.continuing import start_continuing
from tests.support.platform import Platform


def _map(children: list[dict[str, Any]], items_cel: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": items_cel,
        "children": children,
        **extra,
    }


def _echo(node_id: str, **config: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "step",
        "executorKey": "builtin:echo",
        "config": config,
    }


def _dividing(on_error: str | None = None) -> dict[str, Any]:
    """A step `get` outputting {"v": 10 / item}: it fails for an item of 0."""
    step: dict[str, Any] = {
        "id": "get",
        "name": "get",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"v": "10 / item"}},
    }
    if on_error is not None:
        step["stepConfig"] = {"onError": on_error}
    return step


def _delay(node_id: str, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "step",
        "executorKey": "builtin:delay",
        "config": {"seconds": seconds},
        **extra,
    }


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_each_item_runs_the_children_with_item_and_index(platform: Platform) -> None:
    node = _map(
        [
            _echo("double", value="{{ item * 2 }}", at="{{ index }}"),
            {
                "id": "sum",
                "name": "sum",
                "nodeType": "step",
                "executorKey": "builtin:transform",
                "config": {"map": {"v": "previous_step_content.config.value + 1", "i": "index"}},
            },
        ],
        "input.numbers",
    )
    run = await platform.run({"nodes": [node]}, {"numbers": [3, 1, 2]})
    assert run["status"] == "completed", run["errorSummary"]
    # The map's output: each item's result (its last child's output), in item order.
    assert run["finalOutput"] == [{"v": 7, "i": 0}, {"v": 3, "i": 1}, {"v": 5, "i": 2}]
    [m] = [n for n in run["nodeRuns"] if n["nodeName"] == "M"]
    assert m["inputSnapshot"] == {"itemsCel": "input.numbers", "items": 3}
    assert len([n for n in run["nodeRuns"] if n["nodeName"] == "double"]) == 3


async def test_a_thousand_items_complete_in_order_their_records_written_as_they_run(
    platform: Platform,
) -> None:
    step = {
        "id": "e",
        "name": "e",
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": {"n": "item * 10 + index"}},
    }
    node = _map([step], "input.items", maxConcurrency=50)
    run = await platform.run({"nodes": [node]}, {"items": list(range(1000))})
    assert run["status"] == "completed", run["errorSummary"]
    assert [r["n"] for r in run["finalOutput"]] == [i * 11 for i in range(1000)]
    steps = [n for n in run["nodeRuns"] if n["nodeName"] == "e"]
    assert len(steps) == 1000 and len({n["id"] for n in steps}) == 1000
    # All in one activation, a thousand inline steps took ~1 s of an idle core: past the 2 s
    # Temporal's SDK allows one on a loaded core, the SDK interrupted it, the workflow could
    # not be evicted, and the worker's shutdown hung. Each full batch is written on the way
    # (a local activity, which ends the activation), so its records land as the map runs.
    # The run's end is in the store before its workflow task completes, and a task's
    # markers reach the history only with its completion: wait for the workflow itself.
    handle = platform.client.get_workflow_handle(run["id"])
    await handle.result()
    writes = [
        event
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]
    # 1,000 node runs of 200 writes a batch, beside the run's own writes.
    assert len(writes) >= 1000 // FLUSH_AT_WRITES, len(writes)


async def test_at_most_max_concurrency_items_run_at_once(platform: Platform) -> None:
    node = _map([_delay("d", 0.3)], "input.items", maxConcurrency=3)
    run = await platform.run({"nodes": [node]}, {"items": list(range(9))})
    assert run["status"] == "completed", run["errorSummary"]
    spans = [
        (_at(n["startedAt"]), _at(n["finishedAt"])) for n in run["nodeRuns"] if n["nodeName"] == "d"
    ]
    most = max(sum(1 for s, f in spans if s <= start < f) for start, _ in spans)
    assert most == 3


async def test_an_item_whose_step_skips_on_error_yields_none(platform: Platform) -> None:
    failing = _dividing(on_error="skip")
    run = await platform.run({"nodes": [_map([failing], "input.items")]}, {"items": [2, 0, 5]})
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"v": 5.0}, None, {"v": 2.0}]
    statuses = [n["status"] for n in run["nodeRuns"] if n["nodeName"] == "get"]
    assert sorted(statuses) == ["completed", "completed", "skipped"]


async def test_an_item_goes_on_after_a_skipped_step_that_is_not_its_last(
    platform: Platform,
) -> None:
    failing = _dividing(on_error="skip")
    after = _echo("after", seen="{{ index }}")
    run = await platform.run({"nodes": [_map([failing, after], "input.items")]}, {"items": [2, 0]})
    assert run["status"] == "completed", run["errorSummary"]
    assert [o["config"]["seen"] for o in run["finalOutput"]] == [0, 1]
    statuses = [n["status"] for n in run["nodeRuns"] if n["nodeName"] == "after"]
    assert statuses == ["completed", "completed"]


async def test_an_item_that_fails_fails_the_map_and_the_run(platform: Platform) -> None:
    failing = _dividing()
    run = await platform.run({"nodes": [_map([failing], "input.items")]}, {"items": [2, 0]})
    assert run["status"] == "failed"
    [m] = [n for n in run["nodeRuns"] if n["nodeName"] == "M"]
    assert m["status"] == "failed" and m["error"].startswith("child 'get' failed")


async def test_items_cel_must_yield_a_list(platform: Platform) -> None:
    run = await platform.run({"nodes": [_map([_echo("e")], "input.n")]}, {"n": 3})
    assert run["status"] == "failed"
    assert "itemsCel must yield a list, got int 3" in run["errorSummary"]


async def test_a_map_whose_items_cel_fails_shows_the_expression(platform: Platform) -> None:
    run = await platform.run({"nodes": [_map([_echo("e")], "input.n")]}, {"n": 3})
    [m] = [n for n in run["nodeRuns"] if n["nodeName"] == "M"]
    assert m["status"] == "failed" and m["inputSnapshot"] == {"itemsCel": "input.n"}


async def test_a_map_failed_by_an_item_shows_its_items(platform: Platform) -> None:
    run = await platform.run({"nodes": [_map([_dividing()], "input.items")]}, {"items": [2, 0]})
    [m] = [n for n in run["nodeRuns"] if n["nodeName"] == "M"]
    assert m["status"] == "failed" and m["inputSnapshot"] == {"itemsCel": "input.items", "items": 2}


async def test_an_empty_list_maps_to_an_empty_output(platform: Platform) -> None:
    run = await platform.run({"nodes": [_map([_echo("e")], "[]")]})
    assert run["status"] == "completed" and run["finalOutput"] == []


async def test_a_map_continues_as_new_inside_an_item(platform: Platform) -> None:
    nodes = [_map([_delay("a", 0), _delay("b", 0)], "input.items", maxConcurrency=4)]
    wf = await start_continuing(
        platform, "run-map-can", nodes, after_events=40, initial_input={"items": list(range(24))}
    )
    run = await platform.wait(wf, "run-map-can", within=90)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"sleptSeconds": 0.0}] * 24
    assert len([n for n in run["nodeRuns"] if n["nodeName"] == "a"]) == 24
    executions = [e async for e in platform.client.list_workflows("WorkflowId = 'run-map-can'")]
    assert len(executions) > 1


async def test_the_graph_draws_a_map_around_its_children(platform: Platform) -> None:
    wf = await platform.create({"nodes": [_map([_echo("e1"), _echo("e2")], "[1]")]})
    graph = (await platform.api.get(f"/api/v1/workflows/{wf}/graph")).json()
    kinds = {(e["source"], e["target"], e["kind"]) for e in graph["edges"]}
    assert {("M", "e1", "map"), ("e1", "e2", "sequence"), ("e2", "M", "map_back")} <= kinds
