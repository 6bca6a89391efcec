"""Wide fan-outs over a large run context: every step's activity input carries the context
(under the offload size, inline), and one workflow task scheduled them all at once —
past gRPC's 4 MiB, Temporal terminated the run (GrpcMessageTooLarge). The steps in flight
share a byte budget (temporal_workflows/step_inputs.py), and such runs complete."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest

from tests.builders import delay, http_step, transform
from tests.support.continuing import start_continuing
from tests.support.platform import Platform


def _map(children: list[dict[str, Any]], items_cel: str, width: int) -> dict[str, Any]:
    return {"id": "M", "name": "M", "nodeType": "map", "itemsCel": items_cel,
            "maxConcurrency": width, "children": children}  # fmt: skip


def _most_at_once(run: dict[str, Any], name: str) -> int:
    """The most node runs of `name` running at one moment (from their timestamps)."""
    spans = [(_at(n["startedAt"]), _at(n["finishedAt"])) for n in _named(run, name)]
    return max(sum(1 for s, f in spans if s <= start < f) for start, _ in spans)


def _named(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [n for n in run["nodeRuns"] if n["nodeName"] == name]


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.mark.parametrize(
    ("items", "pad"),
    # 200 x 25 KB as the audit's 500 x 10 KB (5 MB in one task), with fewer steps to
    # render in one activation: 500 came near the 2 s deadlock limit under load.
    [(200, 25_000), (50, 100_000), (20, 250_000)],
    ids=["200x25KB", "50x100KB", "20x250KB"],
)
async def test_a_wide_map_over_a_large_input_completes_its_steps_running_at_once(
    platform: Platform, items: int, pad: int
) -> None:
    # The transform reads the item only: one reading `input` converts the whole input to
    # CEL per item, 200 times in one activation, which alone came near the 2 s limit.
    node = _map([delay("d", 0.2), transform("t", i="item")], "input.xs", items)
    workflow_id = await platform.create({"nodes": [node]})
    run_id = await platform.trigger(workflow_id, {"xs": list(range(items)), "pad": "p" * pad})
    run = await platform.wait(workflow_id, run_id, within=120)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"i": i} for i in range(items)]
    assert len(_named(run, "d")) == items
    assert all(n["status"] == "completed" for n in _named(run, "d"))
    assert _most_at_once(run, "d") > 1


async def test_a_wide_parallel_over_a_large_input_completes(platform: Platform) -> None:
    children = [delay(f"c{i}", 0.2) for i in range(30)]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "maxConcurrency": 30,
           "children": children}  # fmt: skip
    workflow_id = await platform.create({"nodes": [fan]})
    run_id = await platform.trigger(workflow_id, {"pad": "p" * 200_000})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {f"c{i}": {"sleptSeconds": 0.2} for i in range(30)}
    spans = [
        (_at(n["startedAt"]), _at(n["finishedAt"]))
        for n in run["nodeRuns"]
        if n["nodeName"].startswith("c")
    ]
    assert len(spans) == 30
    assert max(sum(1 for s, f in spans if s <= start < f) for start, _ in spans) > 1


async def test_steps_that_fail_give_their_bytes_back(platform: Platform) -> None:
    # Eight of these inputs fill the budget: were a failed step's bytes kept, the ninth
    # item would wait for good.
    bad = http_step("bad", f"{platform.peer_url}/status/400") | {"stepConfig": {"onError": "skip"}}
    node = _map([bad, transform("t", i="item")], "input.xs", 20)
    workflow_id = await platform.create({"nodes": [node]})
    run_id = await platform.trigger(workflow_id, {"xs": list(range(20)), "pad": "p" * 250_000})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"i": i} for i in range(20)]
    assert [n["status"] for n in _named(run, "bad")] == ["skipped"] * 20


async def test_steps_past_the_budget_wait_their_turn(platform: Platform) -> None:
    # Each item's input is ~5 KB (the padded run input it carries) and what writes it
    # carries for the outbox: a few fit in 20,000 bytes.
    node = _map([delay("d", 0.3), transform("t", i="item")], "input.xs", 6)
    run_id = f"run-budget-{uuid.uuid4().hex[:8]}"
    workflow_id = await start_continuing(
        platform, run_id, [node], after_events=None,
        initial_input={"xs": list(range(6)), "pad": "p" * 4000}, step_input_bytes=20_000,
    )  # fmt: skip
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == [{"i": i} for i in range(6)]
    assert 1 < _most_at_once(run, "d") < 6
