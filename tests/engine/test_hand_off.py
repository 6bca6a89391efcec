"""A step's activity writes the run's queued writes before its call (the outbox's hand-off).

The workflow task that starts such a step (the run's first, say) runs no local activity;
a decision is still written before its answer; the run's event log keeps its order and
logs each event once, however often a write lands.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowFailureError

from tests.builders import delay, echo, http_step, loop, parallel, retries, workflow
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.platform import Platform

LOCAL_ACTIVITY_MARKER = "core_local_activity"
ACTIVITY_TASK_COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
ACTIVITY_TASK_SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED


async def _history(platform: Platform, run_id: str) -> list[HistoryEvent]:
    # Once the workflow closed: the store says a run ended from its last task's local
    # activity, before Temporal has that task's events.
    handle = platform.client.get_workflow_handle(run_id)
    with contextlib.suppress(WorkflowFailureError):  # closed, however it ended
        await handle.result()
    return list((await handle.fetch_history()).events)


def _local_activities(events: list[HistoryEvent]) -> int:
    return sum(
        1
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
    )


def _before_first_activity_completed(events: list[HistoryEvent]) -> list[HistoryEvent]:
    """The events before an activity first completes. A local activity's marker follows
    the activities its task scheduled, so a marker of the run's first tasks is here."""
    first = next(i for i, e in enumerate(events) if e.event_type == ACTIVITY_TASK_COMPLETED)
    return events[:first]


def _writes_before(scheduled: HistoryEvent) -> list[str] | None:
    """The event types of the writes a scheduled step was handed, in order."""
    (payload,) = scheduled.activity_task_scheduled_event_attributes.input.payloads
    handed = json.loads(payload.data)["writesBefore"]
    if handed is None:
        return None
    runs, node_runs, types = iter(handed["runs"]), iter(handed["nodeRuns"]), []
    for kind in handed["order"]:
        if kind == "r":
            event = next(runs)["event"]
            types += [event["type"]] if event else []
        else:
            types += [e["type"] for e in next(node_runs)["events"]]
    return types


async def _event_types(platform: Platform, run_id: str) -> list[tuple[str, str | None]]:
    logged = await platform.store.list_events(run_id, 0, 1000)
    return [(e["type"], e.get("nodeId")) for e in logged]


async def test_a_run_starting_with_an_activity_step_starts_it_without_a_local_activity(
    platform: Platform,
) -> None:
    wf = await platform.create(workflow("wf", delay("first", 0), delay("second", 0)))
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"

    events = await _history(platform, run_id)
    assert _local_activities(_before_first_activity_completed(events)) == 0
    assert await _event_types(platform, run_id) == [
        ("run_started", None),
        ("node_started", "first"),
        ("node_completed", "first"),
        ("node_started", "second"),
        ("node_completed", "second"),
        ("run_completed", None),
    ]


async def test_a_decision_is_in_the_store_when_its_answer_arrives(platform: Platform) -> None:
    # Not handed to the gated step, which might wait for a free activity slot: a gate
    # answered must not stay listed as pending meanwhile.
    gated = delay("gated", 1, {"requiresConfirmation": True})
    wf, run_id = await start(platform, [gated])
    await wait_for_gate(platform, wf, run_id, "gated")
    answer = await approve(platform, wf, run_id, stepId="gated", resolution="confirm")
    assert answer.status_code == 200, answer.text
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["pendingRequirements"] == []
    assert [r["stepId"] for r in run["resolvedRequirements"]] == ["gated"]
    assert run["status"] == "running"
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    types = await _event_types(platform, run_id)
    assert [t for t, _ in types].count("requirement_resolved") == 1
    assert types.index(("requirement_resolved", None)) < types.index(("node_completed", "gated"))


async def test_writes_handed_to_a_step_that_fails_are_written_again_and_logged_once(
    platform: Platform,
) -> None:
    # The failing step wrote the run's start before its call, but the workflow cannot know
    # it did: the next flush writes it again, and the store applies it once.
    bad = http_step("bad", f"{platform.peer_url}/status/400", stepConfig=retries(0, "skip"))
    wf, run_id = await start(platform, [bad, delay("after", 0)])
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed"
    types = await _event_types(platform, run_id)
    assert types[0] == ("run_started", None)
    assert [t for t, _ in types].count("run_started") == 1
    assert ("node_skipped", "bad") in types
    assert types[-1] == ("run_completed", None)
    assert types.index(("node_skipped", "bad")) < types.index(("node_started", "after"))


async def test_a_loop_of_an_inline_step_and_an_activity_step_runs_no_local_activity_between_them(
    platform: Platform,
) -> None:
    # The inline step's node run is handed to the next activity step with the run's
    # writes: each iteration's activity is scheduled in the task that ran the inline step.
    body = loop("L", echo("b", i="{{ iteration }}"), delay("a", 0), max_iterations=6)
    wf, run_id = await start(platform, [body])
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]

    events = await _history(platform, run_id)
    scheduled = [
        i
        for i, e in enumerate(events)
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert len(scheduled) == 6
    between = [_local_activities(events[a:b]) for a, b in itertools.pairwise(scheduled)]
    assert between == [0] * 5
    echoed = [n for n in run["nodeRuns"] if n["nodeName"] == "b"]
    assert [n["status"] for n in echoed] == ["completed"] * 6
    assert [n["inputSnapshot"]["i"] for n in echoed] == list(range(6))
    types = await _event_types(platform, run_id)
    steps = [(t, node) for t, node in types if node in ("a", "b")]
    iteration = [
        ("node_started", "b"),
        ("node_completed", "b"),
        ("node_started", "a"),
        ("node_completed", "a"),
    ]
    assert steps == iteration * 6


async def test_a_parallel_node_schedules_its_activity_children_before_any_local_activity(
    platform: Platform,
) -> None:
    # The run's start and the parallel node's (it has no gate) go with the first child.
    fan = parallel("P", *(delay(f"c{i}", 0) for i in range(5)), id="P")
    wf, run_id = await start(platform, [fan])
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    events = await _history(platform, run_id)
    assert _local_activities(_before_first_activity_completed(events)) == 0
    # Every child carries them: whichever child's activity writes first writes them first,
    # so no child's node_started is logged before run_started.
    handed = [_writes_before(e) for e in events if e.event_type == ACTIVITY_TASK_SCHEDULED]
    assert len(handed) == 5 and all(w == ["run_started", "node_started"] for w in handed)
    types = await _event_types(platform, run_id)
    assert types[:2] == [("run_started", None), ("node_started", "P")]
    assert types[-2:] == [("node_completed", "P"), ("run_completed", None)]


async def test_an_inline_step_handed_to_a_step_that_fails_is_written_once_and_stays_completed(
    platform: Platform,
) -> None:
    # The failing step's two attempts both write the inline step's node run before their
    # call, and the workflow's next flush writes it again: one node run, its events once.
    bad = http_step("bad", f"{platform.peer_url}/status/500", stepConfig=retries(1, "skip"))
    wf, run_id = await start(platform, [echo("first", x=1), bad, delay("after", 0)])
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run["errorSummary"]
    first = [n for n in run["nodeRuns"] if n["nodeName"] == "first"]
    assert [(n["status"], n["inputSnapshot"]) for n in first] == [("completed", {"x": 1})]
    types = await _event_types(platform, run_id)
    assert types == [
        ("run_started", None),
        ("node_started", "first"),
        ("node_completed", "first"),
        ("node_started", "bad"),
        ("node_started", "bad"),  # its second attempt
        ("node_skipped", "bad"),
        ("node_started", "after"),
        ("node_completed", "after"),
        ("run_completed", None),
    ]


async def test_pausing_while_the_handed_step_runs_answers_at_once(platform: Platform) -> None:
    # A pause is answered once its status is in the store, which writes what the running
    # step was handed too: it does not wait for the step to report.
    wf, run_id = await start(platform, [delay("long", 30)])
    await platform.wait(wf, run_id, {"running"})
    paused = await control(platform, wf, run_id, "pause")
    assert paused.status_code == 200, paused.text
    run: dict[str, Any] = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert run["status"] == "paused"
    run_events = [t for t, node in await _event_types(platform, run_id) if node is None]
    assert run_events == ["run_started", "run_paused"]
    await control(platform, wf, run_id, "cancel")
    assert (await platform.wait(wf, run_id))["status"] == "cancelled"
