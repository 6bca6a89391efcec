"""Wide runs: a parallel node with 500 children runs them all, bounded by maxConcurrency."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle

from tests.builders import condition, delay
from tests.support.platform import Platform


async def test_a_parallel_node_with_five_hundred_children_completes(platform: Platform) -> None:
    children = [
        {
            "id": f"c{i}",
            "name": f"c{i}",
            "nodeType": "step",
            "executorKey": "builtin:transform",
            "config": {"map": {"i": f"{i}"}},
        }
        for i in range(500)
    ]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "maxConcurrency": 500,
           "children": children}  # fmt: skip
    run = await platform.run({"nodes": [fan]})
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {f"c{i}": {"i": i} for i in range(500)}
    assert len(run["nodeRuns"]) == 501


async def test_a_map_of_twenty_thousand_items_starts_within_its_first_workflow_task(
    platform: Platform,
) -> None:
    # Every item got a task and a forked scope in the map's first activation, though only
    # maxConcurrency ran at once: a 3,000-item map on a loaded machine passed the SDK's 2 s
    # deadlock limit there (TMPRL1101) and hung (found by an outside audit). A pool of
    # maxConcurrency runners starts the items in turn. Only the first task is measured (an
    # activity per item ends it; inline steps' local activities would lengthen it).
    # CEL converting the input it reads costs the same in both: a run that reads it in a
    # condition before one activity is the baseline (the map also converts the list back).
    xs = {"xs": list(range(20_000))}
    reads = condition("C", "size(input.xs) > 0", delay("one", 60))
    fan = {"id": "M", "name": "M", "nodeType": "map", "itemsCel": "input.xs",
           "maxConcurrency": 5, "children": [delay("d", 0)]}  # fmt: skip
    baseline = await _first_task_took(platform, reads, xs)
    took = await _first_task_took(platform, fan, xs)
    # Loaded (load 8.6): 1.6 times; all at once: 4.8 times, or TMPRL1101.
    assert took < baseline * 2.5 + 0.3, (took, baseline)


async def _first_task_took(platform: Platform, node: dict[str, Any], xs: dict[str, Any]) -> float:
    """Seconds the first workflow task of a run of `node` took (it must complete)."""
    wf = await platform.create({"nodes": [node]})
    handle = platform.client.get_workflow_handle(await platform.trigger(wf, xs))
    try:
        started, ended = await _first_workflow_task(handle)
    finally:
        await handle.terminate("measured")
    assert ended.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, ended
    return (ended.event_time.ToDatetime() - started.event_time.ToDatetime()).total_seconds()


async def _first_workflow_task(handle: WorkflowHandle[Any, Any]) -> tuple[HistoryEvent, ...]:
    """The first workflow task's start event and the event that ended it."""
    for _ in range(300):
        events = [e async for e in handle.fetch_history_events()]
        started = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED]
        ends = [e for e in events if e.event_type in _TASK_ENDS]
        if started and ends:
            return started[0], ends[0]
        await asyncio.sleep(0.1)
    raise AssertionError("the first workflow task never ended")


_TASK_ENDS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
