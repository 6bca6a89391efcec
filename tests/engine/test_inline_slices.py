"""Long chains of inline steps and containers' expressions run in slices of activations
(inline_slices.py)."""

from __future__ import annotations

import contextlib
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError

from temporal_workflows.inline_slices import (
    CONTAINER_SLICE_PATCH,
    INLINE_SLICE_SHARE_PATCH,
    STEPS_PER_SLICE,
)
from tests.builders import condition, echo, loop, node, transform
from tests.support.platform import Platform
from tests.support.polling import eventually


def _counting_loop(iterations: int) -> list[dict[str, Any]]:
    inc = transform("inc", v="previous_step_content.v + 1")
    return [transform("seed", v="0"), loop("count", inc, max_iterations=iterations)]


def _conditions_loop(iterations: int) -> list[dict[str, Any]]:
    """The audit's loop: a condition whose branch never runs, and nothing else."""
    never = condition("c", "false", echo("s"), id="c", falseSteps=[])
    return [loop("L", never, id="L", max_iterations=iterations)]


async def _patch_markers(platform: Platform, run_id: str) -> list[str]:
    """The patch markers in the run's history, once the workflow has closed."""
    handle = platform.client.get_workflow_handle(run_id)
    with contextlib.suppress(WorkflowFailureError):  # closed, however it ended
        await handle.result()
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    patches = (CONTAINER_SLICE_PATCH, INLINE_SLICE_SHARE_PATCH)
    return [p for m in markers for p in patches if p in str(m)]


async def _markers(platform: Platform, run_id: str, at_least: int) -> bool:
    """Whether the run's history holds `at_least` marker events (a local activity's: each
    cut's write; or a patch's), once the workflow closed: the store says a run completed
    from its last task's local activity, before Temporal has that task's markers (under
    the whole suite's load a completed run's history was read with none at all)."""
    handle = platform.client.get_workflow_handle(run_id)
    with contextlib.suppress(WorkflowFailureError):  # closed, however it ended
        await handle.result()

    async def counted() -> bool:
        history = await handle.fetch_history()
        markers = [
            e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        ]
        return len(markers) >= at_least

    try:
        return bool(await eventually(counted, within=5.0, every=0.5))
    except AssertionError:
        return False


async def test_a_loop_of_two_thousand_inline_steps_completes(platform: Platform) -> None:
    # It failed at ~1,700: every expression of the workflow task shared 50,000 steps.
    wf = await platform.create({"nodes": _counting_loop(2000)})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id, within=120)
    assert run["status"] == "completed", run["errorSummary"]
    # A loop outputs every iteration's last output.
    assert run["finalOutput"] == [{"v": i} for i in range(1, 2001)]
    assert len(run["nodeRuns"]) == 2 + 2000


async def test_each_slice_of_inline_steps_ends_its_activation(platform: Platform) -> None:
    wf = await platform.create({"nodes": _counting_loop(120)})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    # 121 inline steps: cut before the 51st and the 101st (a local activity's marker
    # each), beside the patch's marker and the final write.
    assert await _markers(platform, run_id, at_least=(121 // STEPS_PER_SLICE) + 1)


async def test_map_items_resumed_after_a_cut_share_one_slice(platform: Platform) -> None:
    # 300 items of two inline steps, with no limit on items at once: the items past the
    # first slice all wait at the cut; once resumed, the first one starts the next slice
    # and the rest count on in it (each resumed item restarting the count let the rest of
    # the map run in one activation).
    steps = [transform("a", v="item"), transform("b", v="previous_step_content.v * 2")]
    items = node("M", "map", itemsCel="input.items", maxConcurrency=300, children=steps)
    wf = await platform.create({"nodes": [items]})
    run_id = await platform.trigger(wf, {"items": list(range(300))})
    run = await platform.wait(wf, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"v": 2 * i} for i in range(300)]
    assert await _markers(platform, run_id, at_least=600 // STEPS_PER_SLICE)


async def test_a_slice_ends_once_its_outputs_are_large(platform: Platform) -> None:
    # Fifty large outputs walked and serialized in one activation ran past 2 s: the task
    # was deemed deadlocked and retried for ever (a map of echo steps over a large run
    # input; each echo returns the input). 24 outputs of ~300 KB are cut into slices of
    # about 1 MB, where the count alone cut none.
    echo = node("e", "step", executorKey="builtin:echo", config={"i": "{{ item }}"})
    items = node("M", "map", itemsCel="input.items", maxConcurrency=24, children=[echo])
    wf = await platform.create({"nodes": [items, transform("after", v="1")]})
    run_input = {"items": list(range(24)), "pad": "x" * 300_000}
    run_id = await platform.trigger(wf, run_input)
    run = await platform.wait(wf, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert len(run["nodeRuns"]) == 1 + 24 + 1
    assert await _markers(platform, run_id, at_least=6)


async def test_a_slice_ends_before_its_expressions_spend_the_tasks_share(
    platform: Platform,
) -> None:
    # Twenty transforms of ~6,500 steps each in a row: each fits its own evaluation, but the
    # eighth failed on the task's 50,000-step share ("the expressions evaluated in one
    # workflow task together need more than 50000 steps"), though the same chain with an
    # MCP step every fifth completed.
    steps = [transform(f"t{i}", n="size(input.xs.filter(x, x > 0))") for i in range(20)]
    wf = await platform.create({"nodes": steps})
    run_id = await platform.trigger(wf, {"xs": list(range(1, 251))})
    run = await platform.wait(wf, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {"n": 250}
    # The store says completed from the task's last local activity, before Temporal has
    # that task's markers: read the history once the workflow has closed (read at once, a
    # loaded machine saw only the run's first task started, no marker yet).
    handle = platform.client.get_workflow_handle(run_id)
    with contextlib.suppress(WorkflowFailureError):  # closed, however it ended
        await handle.result()
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert any(INLINE_SLICE_SHARE_PATCH in str(m) for m in markers)  # cut for the share


async def test_a_loop_of_three_thousand_conditions_completes(platform: Platform) -> None:
    # With no inline step in the loop nothing ended its activation: it failed after 2,500
    # iterations on the task's share ("the expressions evaluated in one workflow task
    # together need more than 50000 steps"), 2,400 of them holding one activation about 0.5 s.
    wf = await platform.create({"nodes": _conditions_loop(3000)})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["nodeRuns"][0]["inputSnapshot"] == {"iterations": 3000, "endedBy": "maxIterations"}
    assert len(run["nodeRuns"]) == 1 + 3000
    # A cut (a local activity's marker) every STEPS_PER_SLICE conditions.
    assert await _markers(platform, run_id, at_least=3000 // STEPS_PER_SLICE)
    assert CONTAINER_SLICE_PATCH in await _patch_markers(platform, run_id)


async def test_a_short_loop_of_conditions_marks_no_patch(platform: Platform) -> None:
    # The patch is asked only where a slice ends: runs that need no cut record no marker.
    wf = await platform.create({"nodes": _conditions_loop(STEPS_PER_SLICE - 1)})
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    assert await _patch_markers(platform, run_id) == []
