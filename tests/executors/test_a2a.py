"""A2A agent steps: message, outputs, every error class, polling, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from activities.executors.base import PermanentError, TransientError
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.catalog import Peers


async def test_agent_receives_text_and_data_and_returns_its_artifact(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    call = make_call("account-manager-v1", {"task": "Create an account", "seats": 3})
    outcome = await registry.execute(call)
    assert outcome.output["text"] == "Create an account"
    assert outcome.output["config"] == {"task": "Create an account", "seats": 3}
    assert outcome.output["run"]["runId"] == call.run_id
    assert outcome.resolved_executor == {"kind": "a2a", "key": "account-manager-v1"}


async def test_a_streamed_task_is_read_from_its_stream_alone(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    reads = peers.agent_stats.task_reads["account-manager-v1"]
    outcome = await registry.execute(make_call("account-manager-v1", {"task": "stream"}))
    assert outcome.output["text"] == "stream"  # the artifact, assembled from the stream
    assert peers.agent_stats.task_reads["account-manager-v1"] == reads


async def test_streamed_calls_to_one_agent_share_one_connection(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    # Each stream is read to its end (the server ends it at the task's last event), so
    # its connection goes back to the pool; one closed early would take it along.
    await registry.execute(make_call("account-manager-v1", {"task": "warm up"}))
    ports = peers.agent_stats.client_ports["account-manager-v1"]
    before = len(ports)
    for i in range(8):
        # The stream's end is read after the step has its answer; a worker's next step
        # comes a workflow task later, by when it has been read.
        await registry.a2a.drained()
        outcome = await registry.execute(make_call("account-manager-v1", {"task": f"call {i}"}))
        assert outcome.output["text"] == f"call {i}"
    assert len(ports) == before + 8
    assert len(set(ports[before:])) == 1


async def test_more_than_a_hundred_steps_stream_from_one_agent_at_once(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    # httpx's default pool held the 101st stream until one of the first 100 ended: at
    # most 100 ever worked at once. (Not "all 120": on a loaded machine the last streams
    # may open after the first tasks ended, 3 s in; the full suite once saw 104 at 1.5 s.)
    calls = [make_call("slow-agent", {"task": f"wide {i}", "seconds": 3.0}) for i in range(120)]
    outcomes = await asyncio.gather(*(registry.execute(call) for call in calls))
    assert [o.output["text"] for o in outcomes] == [f"wide {i}" for i in range(120)]
    assert peers.agent_stats.most_working["slow-agent"] > 100


async def test_a_stream_left_open_after_the_task_ended_does_not_hold_the_step(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    started = asyncio.get_running_loop().time()
    outcome = await registry.execute(make_call("lingering-agent", {"task": "linger"}))
    assert outcome.output["text"] == "linger"
    assert asyncio.get_running_loop().time() - started < 1.0  # the agent holds it 5 s
    # Read in the background meanwhile, and given up on after DRAIN_SECONDS (2 s).
    async with asyncio.timeout(4.0):
        await registry.a2a.drained()


async def test_a_stream_that_ends_late_keeps_its_connection(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    # Under load a server may end a stream a while after the task's last event; waiting
    # at most 50 ms for the end, as the step did before, lost the connection then.
    await registry.execute(make_call("late-ending-agent", {"task": "warm up"}))  # its card
    await registry.a2a.drained()
    ports = peers.agent_stats.client_ports["late-ending-agent"]
    before = len(ports)
    for i in range(3):
        outcome = await registry.execute(make_call("late-ending-agent", {"task": f"late {i}"}))
        assert outcome.output["text"] == f"late {i}"
        await registry.a2a.drained()
    assert len(ports) == before + 3
    assert set(ports[before:]) == {ports[before - 1]}


async def test_agent_without_streaming_is_polled(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    reads = peers.agent_stats.task_reads["account-creator-v2"]
    outcome = await registry.execute(make_call("account-creator-v2", {"message": "poll"}))
    assert outcome.output["agent"] == "account-creator-v2"
    assert peers.agent_stats.task_reads["account-creator-v2"] > reads


async def test_failed_task_is_retryable_with_the_agents_message(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(TransientError, match="simulated failure"):
        await registry.execute(make_call("failing-agent"))


async def test_rejected_task_is_permanent_with_the_agents_message(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="does not handle this kind of task"):
        await registry.execute(make_call("rejecting-agent"))


async def test_input_required_is_a_failed_attempt_saying_so(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(TransientError, match=r"input-required.*Which plan"):
        await registry.execute(make_call("input-agent"))


async def test_unreachable_agent_is_retryable(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(TransientError, match="unreachable"):
        await registry.execute(make_call("dead-agent"))


async def test_slow_agent_heartbeats_while_waiting(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    beats: list[object] = []
    call = make_call("slow-agent", {"seconds": 2.2}, heartbeat=lambda *d: beats.append(d))
    outcome = await registry.execute(call)
    assert outcome.output["agent"] == "slow-agent"
    assert len(beats) >= 2  # at one second and at two
    assert all("slow-agent" in str(d) for d in beats)


async def test_a_quick_call_sends_no_heartbeat(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    # Temporal sends an activity's first heartbeat to the server at once: a call that
    # ends within the first interval must not pay for that round trip.
    beats: list[object] = []
    call = make_call("account-manager-v1", {"task": "quick"}, heartbeat=lambda *d: beats.append(d))
    outcome = await registry.execute(call)
    assert outcome.output["text"] == "quick"
    assert beats == []


async def test_cancelled_step_cancels_the_remote_task(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    before = peers.agent_stats.cancellations["slow-agent"]
    task = asyncio.create_task(registry.execute(make_call("slow-agent", {"seconds": 10})))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert peers.agent_stats.cancellations["slow-agent"] == before + 1
