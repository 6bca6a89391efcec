"""The event stream across a gate, a pause and a resume, read as a client would."""

from __future__ import annotations

import asyncio

from tests.events.sse import messages, read_all
from tests.hitl.helpers import wait_for_gate
from tests.support.platform import Platform

FLOW = {
    "nodes": [
        {
            "id": "gate",
            "name": "gate",
            "nodeType": "step",
            "executorKey": "builtin:echo",
            "humanReview": {"requiresConfirmation": True},
        },
        {
            "id": "slow",
            "name": "slow",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"seconds": 0.8},
        },
        {"id": "last", "name": "last", "nodeType": "step", "executorKey": "builtin:echo"},
    ]
}


async def test_a_client_sees_approval_pause_resume_and_completion_in_order(
    platform: Platform,
) -> None:
    wf = await platform.create(FLOW)
    run_id = await platform.trigger(wf)
    run_url = f"/api/v1/workflows/{wf}/runs/{run_id}"
    seen: list[str] = []

    async def act(kind: str, node: str | None) -> None:
        if kind == "awaiting_approval":
            response = await platform.api.post(
                run_url + "/approve", json={"stepId": "gate", "resolution": "confirm"}
            )
            assert response.status_code == 200, response.text
        elif kind == "node_started" and node == "slow":
            assert (await platform.api.post(run_url + "/pause")).status_code == 200
        elif kind == "run_paused":
            assert (await platform.api.post(run_url + "/resume")).status_code == 200

    async def follow() -> None:
        async with platform.api.stream("GET", run_url + "/events", timeout=30) as response:
            async for message in messages(response):
                if message.event:
                    seen.append(message.event)
                    await act(message.event, message.json().get("nodeId"))

    await asyncio.wait_for(follow(), 20)
    order = [
        "run_started",
        "awaiting_approval",
        "requirement_resolved",
        "run_paused",
        "run_resumed",
        "run_completed",
    ]
    positions = [seen.index(kind) for kind in order]
    assert positions == sorted(positions), seen
    assert seen[-1] == "run_completed"


async def test_a_cancel_of_a_run_at_a_gate_is_streamed_before_the_runs_end(
    platform: Platform,
) -> None:
    # A run with nothing in flight ends the moment Temporal cancels it: the API logged
    # its cancel_requested after that, so the event sometimes followed run_cancelled
    # (the stream, closed at the end, never showed it) and sometimes preceded it with a
    # later timestamp. Six runs, every second one paused first, as the race needs.
    wf = await platform.create(FLOW)
    runs = [await platform.trigger(wf) for _ in range(6)]
    for i, run_id in enumerate(runs):
        run_url = f"/api/v1/workflows/{wf}/runs/{run_id}"
        await wait_for_gate(platform, wf, run_id, "gate")
        if i % 2:
            assert (await platform.api.post(run_url + "/pause")).status_code == 200
        assert (await platform.api.post(run_url + "/cancel")).status_code == 200
    for run_id in runs:
        assert (await platform.wait(wf, run_id))["status"] == "cancelled"
        stream = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
        events = [m.json() for m in stream if m.event]
        kinds = [e["type"] for e in events]
        assert kinds.index("cancel_requested") < kinds.index("run_cancelled"), kinds
        assert kinds[-1] == "run_cancelled", kinds
        stamps = [e["timestamp"] for e in events]
        assert stamps == sorted(stamps), list(zip(kinds, stamps, strict=True))
