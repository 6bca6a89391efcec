"""Pause, resume and cancel through the API (Temporal Updates and cancellation)."""

import asyncio
import time
from typing import Any

import pytest

from tests.builders import condition, delay, echo, loop
from tests.events.sse import messages, read_all
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.platform import Platform


async def test_pause_lets_the_running_step_finish_and_starts_nothing_new(
    platform: Platform,
) -> None:
    wf, run_id = await start(platform, [delay("slow", 0.6), echo("next")])
    await platform.wait(wf, run_id, {"running"})
    response = await control(platform, wf, run_id, "pause")
    assert response.status_code == 200 and response.json()["status"] == "paused"
    await asyncio.sleep(1.2)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "paused" and run["pausedAt"] is not None
    assert [(n["nodeName"], n["status"]) for n in run["nodeRuns"]] == [("slow", "completed")]
    resumed = await control(platform, wf, run_id, "resume")
    assert resumed.status_code == 200
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed" and run["pausedAt"] is None


async def test_pause_inside_a_parallel_block_holds_at_the_next_boundary(
    platform: Platform,
) -> None:
    wf, run_id = await start(
        platform,
        [
            {
                "name": "fan",
                "nodeType": "parallel",
                "children": [
                    {
                        "name": "left",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 2},
                        "children": [delay("tick", 1.5)],
                    },
                    delay("right", 0.1),
                ],
            }
        ],
    )
    # The first tick runs 1.5 s from about when the run shows running: the pause lands
    # inside it even on a loaded machine (0.3 s did not always).
    await platform.wait(wf, run_id, {"running"})
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    deadline = time.monotonic() + 15
    while True:
        run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
        ticks = [n for n in run["nodeRuns"] if n["nodeName"] == "tick"]
        if (ticks and ticks[0]["status"] == "completed") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # time enough for a second tick, were one to start
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    ticks = [n for n in run["nodeRuns"] if n["nodeName"] == "tick"]
    assert run["status"] == "paused"
    assert len(ticks) == 1 and ticks[0]["status"] == "completed", ticks
    await control(platform, wf, run_id, "resume")
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert len([n for n in run["nodeRuns"] if n["nodeName"] == "tick"]) == 2


async def test_pause_and_resume_refuse_runs_in_the_wrong_state(platform: Platform) -> None:
    wf, run_id = await start(platform, [delay("slow", 0.5)])
    await platform.wait(wf, run_id, {"running"})
    assert (await control(platform, wf, run_id, "resume")).status_code == 409
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    again = await control(platform, wf, run_id, "pause")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    await control(platform, wf, run_id, "resume")
    await platform.wait(wf, run_id)
    assert (await control(platform, wf, run_id, "pause")).status_code == 409


async def test_pause_resume_and_cancel_refuse_a_body_and_change_nothing(
    platform: Platform,
) -> None:
    # Each acted on any body, malformed JSON too: `{bad` paused the run, answered 200 (an
    # audit); a reason sent to a cancel was dropped unread.
    wf, run_id = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    json_type = {"content-type": "application/json"}
    for action in ("pause", "resume", "cancel"):
        for body in (b"{bad", b'{"reason": "done"}', b"[]", b"null"):
            sent = await platform.api.post(f"{base}/{action}", content=body, headers=json_type)
            assert sent.status_code == 400, (action, body, sent.text)
            error = sent.json()["error"]
            assert error["code"] == "invalid_request"
            assert error["message"] == f"A {action} takes no body"
    run = (await platform.api.get(base)).json()
    assert run["status"] == "awaiting_approval" and run["pausedAt"] is None
    events = [e["type"] for e in await platform.store.list_events(run_id, 0, 100)]
    assert not {"run_paused", "cancel_requested", "run_cancelled"} & set(events), events
    # No body, or `{}`, is none.
    assert (await platform.api.post(f"{base}/pause", json={})).status_code == 200
    assert (await control(platform, wf, run_id, "resume")).status_code == 200


async def test_a_gate_decided_while_paused_continues_only_after_resume(
    platform: Platform,
) -> None:
    nodes = [echo("gate", {"requiresConfirmation": True}), echo("after")]
    wf, run_id = await _decide_while_paused(platform, nodes, "confirm")
    await asyncio.sleep(0.5)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "paused" and len(run["nodeRuns"]) == 1
    # Decided: no longer awaiting approval; it runs once the run resumes.
    assert run["nodeRuns"][0]["status"] == "pending"
    assert (await control(platform, wf, run_id, "resume")).status_code == 200
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert [(n["nodeId"], n["status"], bool(n["finishedAt"])) for n in run["nodeRuns"]] == [
        ("gate", "completed", True),
        ("after", "completed", True),
    ]


@pytest.mark.parametrize(
    ("on_timeout", "gate_ends"), [("skip", "skipped"), ("approve", "completed")]
)
async def test_a_gate_timer_firing_while_paused_decides_the_gate_and_the_run_waits_for_resume(
    platform: Platform, on_timeout: str, gate_ends: str
) -> None:
    # The timer's decision was recorded, but the node run showed awaiting_approval until
    # the run was resumed.
    timed = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": on_timeout}
    wf, run_id = await start(platform, [echo("gate", timed), echo("after")])
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    url = f"/api/v1/workflows/{wf}/runs/{run_id}"
    for _ in range(100):
        run = (await platform.api.get(url)).json()
        if run["resolvedRequirements"] and run["nodeRuns"][0]["status"] != "awaiting_approval":
            break
        await asyncio.sleep(0.1)
    assert run["status"] == "paused" and run["pendingRequirements"] == []
    [decided] = run["resolvedRequirements"]
    assert decided["resolution"] == f"timeout:{on_timeout}" and decided["source"] == "timeout"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [("gate", "pending")]
    await asyncio.sleep(0.5)  # nothing after the gate runs while paused
    run = (await platform.api.get(url)).json()
    assert run["status"] == "paused" and [n["nodeId"] for n in run["nodeRuns"]] == ["gate"]
    assert (await control(platform, wf, run_id, "resume")).status_code == 200
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [
        ("gate", gate_ends),
        ("after", "completed"),
    ]


async def test_a_container_gate_timing_out_while_paused_shows_the_container_running(
    platform: Platform,
) -> None:
    timed = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": "approve"}
    branch = condition("check", "true", echo("inside"), id="check", humanReview=timed)
    wf, run_id = await start(platform, [branch])
    await wait_for_gate(platform, wf, run_id, "check")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    url = f"/api/v1/workflows/{wf}/runs/{run_id}"
    for _ in range(100):
        run = (await platform.api.get(url)).json()
        if run["resolvedRequirements"]:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.3)
    run = (await platform.api.get(url)).json()
    assert run["status"] == "paused"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [("check", "running")]
    assert (await control(platform, wf, run_id, "resume")).status_code == 200
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [
        ("check", "completed"),
        ("inside", "completed"),
    ]


@pytest.mark.parametrize(
    ("gated", "held"),
    [
        (echo("gate", {"requiresConfirmation": True}), "pending"),
        (
            condition(
                "gate",
                "true",
                echo("inside"),
                id="gate",
                humanReview={"requiresConfirmation": True},
            ),
            "running",
        ),
        # It ran; its output is not accepted yet (it showed pending, as if it had not run).
        (echo("gate", {"requiresOutputReview": True}), "running"),
    ],
    ids=["step", "container", "output-review"],
)
async def test_a_live_stream_sees_a_gate_decided_while_paused_leave_awaiting_approval(
    platform: Platform, gated: dict[str, Any], held: str
) -> None:
    # The node run moved on in the store, but its write carried no node event: a client
    # following node events kept showing awaiting_approval until the run was resumed.
    wf, run_id = await start(platform, [gated, echo("after")])
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    url = f"/api/v1/workflows/{wf}/runs/{run_id}/events"
    async with platform.api.stream("GET", url, timeout=30) as response:
        decided = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
        assert decided.status_code == 200 and decided.json()["status"] == "paused"
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(10):
            async for message in messages(response):
                if message.data:
                    seen.append(message.json())
                if seen and seen[-1]["type"] == "requirement_resolved":
                    break
    gate_events = [(e["type"], e["status"]) for e in seen if e.get("nodeId") == "gate"]
    # What a client folding node events into node statuses shows now.
    assert gate_events[-1] == ("node_decided", held), gate_events
    assert ("node_awaiting_approval", "awaiting_approval") in gate_events
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "paused"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"]] == [("gate", held)]
    assert (await control(platform, wf, run_id, "resume")).status_code == 200
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    assert [(n["nodeId"], n["status"]) for n in run["nodeRuns"] if n["nodeId"] == "gate"] == [
        ("gate", "completed")
    ]
    # The stream's last word on the gate's node run is its end, as the record says.
    events = await platform.store.list_events(run_id, 0, 100)
    ended = [(e["type"], e["status"]) for e in events if e.get("nodeId") == "gate"][-1]
    assert ended == ("node_completed", "completed"), events


@pytest.mark.parametrize(
    "gated",
    [
        condition(
            "gate",
            "true",
            delay("inside", 1),
            id="gate",
            humanReview={"requiresConfirmation": True},
        ),
        loop(
            "gate",
            delay("inside", 1),
            max_iterations=1,
            id="gate",
            humanReview={"requiresConfirmation": True},
        ),
    ],
    ids=["condition", "loop"],
)
async def test_a_live_stream_sees_a_container_gate_decided_leave_awaiting_approval(
    platform: Platform, gated: dict[str, Any]
) -> None:
    # Decided while the run was not paused, the container's node run moved to running with
    # no node event: a client following node events showed awaiting_approval until the
    # container ended.
    wf, run_id = await start(platform, [gated])
    await wait_for_gate(platform, wf, run_id, "gate")
    url = f"/api/v1/workflows/{wf}/runs/{run_id}"
    async with platform.api.stream("GET", f"{url}/events", timeout=30) as response:
        decided = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
        assert decided.status_code == 200 and decided.json()["status"] == "running"
        run = (await platform.api.get(url)).json()
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(10):
            async for message in messages(response):
                if message.data:
                    seen.append(message.json())
                if seen and seen[-1]["type"] == "requirement_resolved":
                    break
    # The read model says so as the answer arrives, while the container's body runs.
    shown = [(n["nodeId"], n["status"]) for n in run["nodeRuns"] if n["nodeId"] == "gate"]
    assert shown == [("gate", "running")], run["nodeRuns"]
    gate_events = [(e["type"], e["status"]) for e in seen if e.get("nodeId") == "gate"]
    assert gate_events[-2:] == [
        ("node_awaiting_approval", "awaiting_approval"),
        ("node_decided", "running"),
    ], gate_events
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    events = await platform.store.list_events(run_id, 0, 100)
    kinds = [e["type"] for e in events if e.get("nodeId") == "gate"]
    assert kinds == [
        "node_started",
        "node_awaiting_approval",
        "node_decided",
        "node_completed",
    ], kinds


async def test_cancel_stops_a_long_step_and_starts_nothing_after(platform: Platform) -> None:
    wf, run_id = await start(platform, [delay("long", 30), echo("never")])
    run = await platform.wait(wf, run_id, {"running"})
    while not run["nodeRuns"]:
        run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    started = time.monotonic()
    response = await control(platform, wf, run_id, "cancel")
    assert response.status_code == 200
    run = await platform.wait(wf, run_id, within=10)
    assert time.monotonic() - started < 5
    assert run["status"] == "cancelled"
    assert [(n["nodeName"], n["status"]) for n in run["nodeRuns"]] == [("long", "cancelled")]
    assert (await control(platform, wf, run_id, "cancel")).status_code == 409


async def test_cancel_works_on_paused_and_waiting_runs(platform: Platform) -> None:
    wf, waiting = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, waiting, "gate")
    assert (await control(platform, wf, waiting, "cancel")).status_code == 200
    run = await platform.wait(wf, waiting)
    assert run["status"] == "cancelled" and run["pendingRequirements"] == []
    assert run["nodeRuns"][0]["status"] == "cancelled"
    wf2, paused = await start(platform, [delay("slow", 0.3), echo("after")])
    await platform.wait(wf2, paused, {"running"})
    await control(platform, wf2, paused, "pause")
    await platform.wait(wf2, paused, {"paused"})
    assert (await control(platform, wf2, paused, "cancel")).status_code == 200
    assert (await platform.wait(wf2, paused))["status"] == "cancelled"


async def test_two_pauses_by_the_same_caller_are_both_logged(platform: Platform) -> None:
    # Equal events one after the other are the run's, not a repeated task's: each write
    # has its own sequence number in the event's key.
    wf, run_id = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, wf, run_id, "gate")
    for action in ("pause", "resume", "pause"):
        assert (await control(platform, wf, run_id, action)).status_code == 200
    events = await platform.store.list_events(run_id, 0, 100)
    paused = [
        {k: v for k, v in e.items() if k not in ("id", "timestamp")}
        for e in events
        if e["type"] == "run_paused"
    ]
    assert len(paused) == 2 and paused[0] == paused[1]
    assert [e["type"] for e in events][-3:] == ["run_paused", "run_resumed", "run_paused"]


async def _decide_while_paused(
    platform: Platform, nodes: list[dict[str, Any]], resolution: str
) -> tuple[str, str]:
    """A run whose gate `gate` was decided while the run was paused (it stays paused)."""
    wf, run_id = await start(platform, nodes)
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    decided = await approve(platform, wf, run_id, stepId="gate", resolution=resolution)
    assert decided.status_code == 200 and decided.json()["status"] == "paused"
    assert decided.json()["message"] == (
        f"Requirement resolved as {resolution}; the run stays paused until resumed"
    )
    return wf, run_id


async def _assert_ended_cancelled(
    platform: Platform, wf: str, run_id: str, gates: set[str]
) -> dict[str, Any]:
    """The run ended cancelled and every gate's node run with it: in the run's record, its
    graph and its event stream (which ends with the run's cancellation)."""
    run = await platform.wait(wf, run_id)
    assert run["status"] == "cancelled" and run["pendingRequirements"] == []
    nodes = {n["nodeId"]: n for n in run["nodeRuns"] if n["nodeId"] in gates}
    assert {k: (n["status"], bool(n["finishedAt"])) for k, n in nodes.items()} == {
        g: ("cancelled", True) for g in gates
    }, run["nodeRuns"]
    graph = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}/graph")).json()
    shown = {n["id"]: (n["status"], bool(n["finishedAt"])) for n in graph["nodes"]}
    assert {g: shown[g] for g in gates} == {g: ("cancelled", True) for g in gates}
    events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
    kinds = [(m.event, m.json().get("nodeId")) for m in events if m.event]
    assert kinds[-1] == ("run_cancelled", None), kinds
    decided = [kind for kind, _ in kinds].index("requirement_resolved")
    for gate in gates:
        assert kinds.index(("node_cancelled", gate)) > decided, kinds
    return run


async def test_a_cancelling_rejection_while_paused_cancels_the_run_at_once(
    platform: Platform,
) -> None:
    # The run stayed paused until resumed, and only then was cancelled: a run nobody
    # resumed never ended.
    fan = {
        "id": "fan",
        "name": "fan",
        "nodeType": "parallel",
        "children": [
            echo("gate", {"requiresConfirmation": True, "onReject": "cancel"}),
            echo("other", {"requiresConfirmation": True}),
        ],
    }
    wf, run_id = await start(platform, [fan, echo("after")])
    await wait_for_gate(platform, wf, run_id, "other")
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    assert decided.status_code == 200
    assert decided.json()["status"] == "cancelled"
    assert decided.json()["message"] == (
        "Requirement resolved as reject; the run is cancelled (the gate's onReject is cancel)"
    )
    run = await _assert_ended_cancelled(platform, wf, run_id, {"fan", "gate", "other"})
    assert run["errorSummary"] == "Cancelled at 'gate' (rejected by dev)"
    # Nothing after the cancelled block ran, though the cancel ended the pause.
    assert {n["nodeId"] for n in run["nodeRuns"]} == {"fan", "gate", "other"}
    assert (await control(platform, wf, run_id, "resume")).status_code == 409


async def test_a_gate_timer_cancelling_while_paused_cancels_the_run_at_once(
    platform: Platform,
) -> None:
    # The timer's onTimeout: cancel was recorded, but the run stayed paused until resumed.
    timed = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": "cancel"}
    wf, run_id = await start(platform, [echo("gate", timed), echo("after")])
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    run = await _assert_ended_cancelled(platform, wf, run_id, {"gate"})
    assert run["errorSummary"] == "Cancelled at 'gate' (timed out)"
    [decided] = run["resolvedRequirements"]
    assert decided["resolution"] == "timeout:cancel" and decided["source"] == "timeout"
    assert [n["nodeId"] for n in run["nodeRuns"]] == ["gate"]


async def _assert_ended_failed(
    platform: Platform, wf: str, run_id: str, ended: dict[str, str]
) -> dict[str, Any]:
    """The run ended failed, its node runs as `ended` says, with nothing else run: in the
    run's record and its event stream (which ends with the run's failure)."""
    run = await platform.wait(wf, run_id, within=5.0)
    assert run["status"] == "failed" and run["pendingRequirements"] == []
    nodes = {n["nodeId"]: n for n in run["nodeRuns"]}
    assert {k: (n["status"], bool(n["finishedAt"])) for k, n in nodes.items()} == {
        k: (status, True) for k, status in ended.items()
    }, run["nodeRuns"]
    events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")
    kinds = [(m.event, m.json().get("nodeId")) for m in events if m.event]
    assert kinds[-1] == ("run_failed", None), kinds
    assert (await control(platform, wf, run_id, "resume")).status_code == 409
    return run


async def test_a_rejection_failing_the_run_while_paused_fails_it_at_once(
    platform: Platform,
) -> None:
    # The rejection (onReject: retry, no retries left) was recorded, but the run stayed
    # paused until resumed, and only then failed: a run nobody resumed never ended.
    fan = {
        "id": "fan",
        "name": "fan",
        "nodeType": "parallel",
        "children": [
            echo("gate", {"requiresConfirmation": True, "onReject": "retry", "maxRetries": 0}),
            echo("other", {"requiresConfirmation": True}),
        ],
    }
    wf, run_id = await start(platform, [fan, echo("after")])
    await wait_for_gate(platform, wf, run_id, "other")
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    assert decided.status_code == 200
    assert decided.json()["status"] == "failed"
    assert decided.json()["message"] == (
        "Requirement resolved as reject; the run fails (the gate's retries are spent)"
    )
    ended = {"fan": "failed", "gate": "failed", "other": "cancelled"}
    run = await _assert_ended_failed(platform, wf, run_id, ended)
    assert run["errorSummary"] == "Node 'gate' failed: rejected by reviewer after 0 retries"


async def test_a_rejection_failing_a_running_run_answers_failed(platform: Platform) -> None:
    # The answer said `running` ("run resuming") though the run failed the next moment;
    # paused, the same decision answered `failed`.
    gate = {"requiresConfirmation": True, "onReject": "retry", "maxRetries": 0}
    wf, run_id = await start(platform, [echo("gate", gate), echo("after")])
    await wait_for_gate(platform, wf, run_id, "gate")
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    assert decided.status_code == 200
    assert (decided.json()["status"], decided.json()["message"]) == (
        "failed",
        "Requirement resolved as reject; the run fails (the gate's retries are spent)",
    )
    run = await _assert_ended_failed(platform, wf, run_id, {"gate": "failed"})
    assert run["errorSummary"] == "Node 'gate' failed: rejected by reviewer after 0 retries"


async def test_an_output_review_failing_the_run_while_paused_fails_it_at_once(
    platform: Platform,
) -> None:
    # The step ran again after a first rejection; the second, made while paused, spent
    # its retries and fails the run (its onError is fail) without waiting for a resume.
    review = {"requiresOutputReview": True, "onReject": "retry", "maxRetries": 1}
    wf, run_id = await start(platform, [echo("gate", review), echo("after")])
    await wait_for_gate(platform, wf, run_id, "gate")
    first = await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    assert first.status_code == 200 and first.json()["status"] == "running"
    run = await platform.wait(wf, run_id, {"awaiting_approval"})
    while [r["retryCount"] for r in run["pendingRequirements"]] != [1]:
        await asyncio.sleep(0.05)
        run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    decided = await approve(
        platform, wf, run_id, stepId="gate", resolution="reject", feedback="still wrong"
    )
    assert decided.status_code == 200 and decided.json()["status"] == "failed"
    run = await _assert_ended_failed(platform, wf, run_id, {"gate": "failed"})
    assert run["errorSummary"] == (
        "Node 'gate' failed: rejected by reviewer after 1 retry: still wrong"
    )
    assert [n["nodeId"] for n in run["nodeRuns"]] == ["gate", "gate"]


@pytest.mark.parametrize("resolution", ["confirm", "reject"])
async def test_a_gate_decided_while_paused_ends_cancelled_when_the_run_is_cancelled(
    platform: Platform, resolution: str
) -> None:
    nodes = [echo("gate", {"requiresConfirmation": True}), echo("after")]
    wf, run_id = await _decide_while_paused(platform, nodes, resolution)
    assert (await control(platform, wf, run_id, "cancel")).status_code == 200
    run = await _assert_ended_cancelled(platform, wf, run_id, {"gate"})
    assert [n["nodeId"] for n in run["nodeRuns"]] == ["gate"]


async def test_a_cancelled_parallel_block_closes_decided_and_open_gates_alike(
    platform: Platform,
) -> None:
    fan = {
        "id": "fan",
        "name": "fan",
        "nodeType": "parallel",
        "children": [
            echo("gate", {"requiresConfirmation": True}),
            echo("other", {"requiresConfirmation": True}),
        ],
    }
    wf, run_id = await start(platform, [fan])
    await wait_for_gate(platform, wf, run_id, "other")
    await wait_for_gate(platform, wf, run_id, "gate")
    assert (await control(platform, wf, run_id, "pause")).status_code == 200
    decided = await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    assert decided.status_code == 200 and decided.json()["status"] == "paused"
    assert (await control(platform, wf, run_id, "cancel")).status_code == 200
    await _assert_ended_cancelled(platform, wf, run_id, {"fan", "gate", "other"})
