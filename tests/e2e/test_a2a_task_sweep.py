"""The abandoned A2A tasks' sweep (activities/a2a_task_sweep.py) against the real agents: it
cancels only tasks whose step is gone, once. A run cancelled while its worker is alive has
its step cancel the task, and the sweep sends nothing, even right after the cancel, before
the step heard of it; a note no step follows any more is taken once it has not been
followed for the sweep's bound; a task that completed is never cancelled; an agent's "no
such task" settles one, an unreachable agent is tried again until the sweep gives up. (The
worker killed: tests/faults/test_a2a_task_after_worker_loss.py.)"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.a2a_task_sweep import AbandonedA2ATasks
from activities.executors.a2a_task_notes import FOLLOW_SECONDS
from activities.executors.registry import ExecutorRegistry
from activities.store.records import A2ATaskRef
from tests.builders import step
from tests.e2e.helpers import node_runs
from tests.peers.catalog import Peers
from tests.support.platform import Platform
from tests.support.polling import eventually

FAR = datetime.now(UTC) + timedelta(days=1)
# When the notes of steps long gone were last followed: far past the sweep's bound.
LONG_AGO = datetime.now(UTC) - timedelta(hours=1)


async def test_a_run_cancelled_with_its_worker_alive_has_its_task_cancelled_once(
    platform: Platform, peers: Peers, peer_registry: ExecutorRegistry
) -> None:
    stats = peers.agent_stats
    asked = stats.cancel_requests["slow-agent"]
    wf, run_id, task_id = await _slow_agent_task(platform, peers)
    await asyncio.sleep(1)  # noted once it has worked 0.2 s

    response = await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
    assert response.status_code == 200, response.text
    run = await platform.wait(wf, run_id)
    assert run["status"] == "cancelled", run
    await eventually(lambda: task_id in asked, within=5)
    swept = await AbandonedA2ATasks(platform.store, peer_registry.a2a).sweep()

    # The step cancelled it and settled its note: the sweep has nothing left to do.
    assert (swept.settled, swept.retrying) == ([], [])
    assert asked.count(task_id) == 1, asked


async def test_a_sweep_right_after_a_cancel_leaves_the_task_to_its_live_step(
    platform: Platform,
    peers: Peers,
    peer_registry: ExecutorRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The run ends before its step hears of the cancel (at its next heartbeat): a sweep in
    # between took the task, cancelled it "while no worker followed it", and the step then
    # found its task cancelled by the agent.
    caplog.set_level(logging.INFO, logger="trellis.a2a_tasks")
    stats = peers.agent_stats
    asked = stats.cancel_requests["slow-agent"]
    wf, run_id, task_id = await _slow_agent_task(platform, peers)
    await asyncio.sleep(1)  # noted once it has worked 0.2 s

    response = await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
    assert response.status_code == 200, response.text
    assert (await platform.wait(wf, run_id))["status"] == "cancelled"
    swept = await AbandonedA2ATasks(platform.store, peer_registry.a2a).sweep()

    assert (swept.settled, swept.retrying) == ([], [])
    # The step cancels it itself, once, and settles its note.
    await eventually(lambda: task_id in asked, within=5)
    assert (await AbandonedA2ATasks(platform.store, peer_registry.a2a).sweep()).settled == []
    assert asked.count(task_id) == 1, asked
    assert f"cancelled A2A task {task_id}" not in caplog.text
    assert "A2A agent 'slow-agent' cancelled the task" not in caplog.text


async def test_a_step_following_its_task_past_the_bound_keeps_saying_so(
    platform: Platform, peers: Peers, peer_registry: ExecutorRegistry
) -> None:
    # Noted at 0.2 s, said again at a heartbeat every FOLLOW_SECONDS: cancelled at ~5 s, the
    # note is ~1 s old, not 5.
    stats = peers.agent_stats
    wf, run_id, task_id = await _slow_agent_task(platform, peers)
    await asyncio.sleep(FOLLOW_SECONDS + 2)

    response = await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
    assert response.status_code == 200, response.text
    assert (await platform.wait(wf, run_id))["status"] == "cancelled"
    bound = timedelta(seconds=FOLLOW_SECONDS + 0.5)
    swept = await AbandonedA2ATasks(
        platform.store, peer_registry.a2a, unfollowed_after=bound
    ).sweep()

    assert (swept.settled, swept.retrying) == ([], [])
    await eventually(lambda: task_id in stats.cancel_requests["slow-agent"], within=5)


async def test_a_note_no_step_follows_is_taken_once_unfollowed_for_the_bound(
    platform: Platform, peers: Peers, peer_registry: ExecutorRegistry
) -> None:
    asked = peers.agent_stats.cancel_requests["slow-agent"]
    task = A2ATaskRef(f"run-{uuid.uuid4()}", "gone.step.1", "slow-agent", str(uuid.uuid4()))
    await platform.store.record_a2a_task(task, datetime.now(UTC))  # its run is not stored
    bound = timedelta(seconds=0.5)
    sweep = AbandonedA2ATasks(platform.store, peer_registry.a2a, unfollowed_after=bound)

    assert (await sweep.sweep()).settled == []  # followed a moment ago
    await asyncio.sleep(bound.total_seconds())
    assert (await sweep.sweep()).settled == [task]
    assert asked.count(task.task_id) == 1


async def test_a_task_that_completed_is_never_cancelled(
    platform: Platform, peers: Peers, peer_registry: ExecutorRegistry
) -> None:
    stats = peers.agent_stats
    asked = list(stats.cancel_requests["slow-agent"])
    # Worked 1 s: noted (after 0.2 s), then settled when it completed.
    run = await platform.run({"nodes": [step("Think", "slow-agent", {"seconds": 1})]})
    assert run["status"] == "completed", run
    node_run_id = node_runs(run)["Think"]["id"]
    task_id = stats.task_of_node_run[node_run_id]

    swept = await AbandonedA2ATasks(platform.store, peer_registry.a2a).sweep()

    assert (swept.settled, swept.retrying) == ([], [])
    assert task_id not in stats.cancel_requests["slow-agent"]
    assert stats.cancel_requests["slow-agent"] == asked


async def test_a_task_its_agent_does_not_know_is_settled_by_the_answer(
    platform: Platform, peers: Peers, peer_registry: ExecutorRegistry
) -> None:
    asked = peers.agent_stats.cancel_requests["slow-agent"]
    task = A2ATaskRef(f"run-{uuid.uuid4()}", "gone.step.1", "slow-agent", str(uuid.uuid4()))
    await platform.store.record_a2a_task(task, LONG_AGO)  # its run is not stored
    sweep = AbandonedA2ATasks(platform.store, peer_registry.a2a)

    assert (await sweep.sweep()).settled == [task]
    assert asked.count(task.task_id) == 1  # answered "task not found"
    assert (await sweep.sweep()).settled == []


@pytest.mark.parametrize("catalogued", [True, False])
async def test_an_unreachable_agent_is_tried_again_until_the_sweep_gives_up(
    platform: Platform, peer_registry: ExecutorRegistry, catalogued: bool
) -> None:
    agent = "dead-agent" if catalogued else "agent-no-longer-in-the-catalog"
    task = A2ATaskRef(f"run-{uuid.uuid4()}", "gone.step.1", agent, str(uuid.uuid4()))
    await platform.store.record_a2a_task(task, LONG_AGO)
    patient = AbandonedA2ATasks(platform.store, peer_registry.a2a)

    first, second = await patient.sweep(), await patient.sweep()
    assert (first.retrying, second.retrying, first.settled) == ([task], [task], [])
    now = datetime.now(UTC)
    [held] = await platform.store.claim_abandoned_a2a_tasks(
        now, timedelta(0), 9, followed_before=now
    )
    assert held.first_failed_at is not None

    hasty = AbandonedA2ATasks(platform.store, peer_registry.a2a, give_up_after=timedelta(0))
    assert (await hasty.sweep()).given_up == [task]
    assert (
        await platform.store.claim_abandoned_a2a_tasks(FAR, timedelta(0), 9, followed_before=FAR)
        == []
    )


async def _slow_agent_task(platform: Platform, peers: Peers) -> tuple[str, str, str]:
    """A run of one long A2A step, started: its workflow, run and the agent's task ids."""
    wf = await platform.create({"nodes": [step("Think", "slow-agent", {"seconds": 300})]})
    run_id = await platform.trigger(wf)
    await eventually(lambda: _node_run_written(platform, wf, run_id))
    node_run_id = (await _node_run_written(platform, wf, run_id))["id"]
    return wf, run_id, await eventually(lambda: peers.agent_stats.task_of_node_run.get(node_run_id))


async def _node_run_written(platform: Platform, wf: str, run_id: str) -> dict[str, Any] | None:
    nodes: list[dict[str, Any]] = (await platform.wait(wf, run_id, {"running"}))["nodeRuns"]
    return nodes[0] if nodes else None
