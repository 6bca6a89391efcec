"""A2A agent steps: message, outputs, every error class, polling, cancellation, and a
next attempt following the task an earlier one started."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import new_text_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest

from activities.executors import a2a as a2a_executor
from activities.executors.a2a import TASK_PROGRESS_KEY
from activities.executors.base import PermanentError, TransientError
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile, McpServerSpec
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.catalog import Peers
from tests.peers.serving import ServedApp, free_port
from tests.support.loopback import LOOPBACK_ALLOWED


async def test_agent_receives_text_and_data_and_returns_its_artifact(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    call = make_call("account-manager-v1", {"task": "Create an account", "seats": 3})
    outcome = await registry.execute(call)
    assert outcome.output["text"] == "Create an account"
    assert outcome.output["config"] == {"task": "Create an account", "seats": 3}
    assert outcome.output["run"]["runId"] == call.run_id
    assert outcome.resolved_executor == {"kind": "a2a", "key": "account-manager-v1"}


async def test_an_integer_a_double_would_change_fails_the_step_before_anything_is_sent(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    # An audit: the agent received 9007199254740992.0 for 9007199254740993, silently.
    calls = peers.agent_stats.calls["account-manager-v1"]
    cases = [
        ({"accountId": 9007199254740993}, {}, "config.accountId is 9007199254740993"),
        ({"a": {"ids": [1, -(2**53) - 1]}}, {}, "config.a.ids[1] is -9007199254740993"),
    ]
    for config, context, said in cases:
        call = make_call("account-manager-v1", config, context=context)
        with pytest.raises(PermanentError) as refused:
            await registry.execute(call)
        assert str(refused.value) == (
            f"{said}, beyond ±2^53: A2A carries numbers as doubles, which would send another"
            " number to agent 'account-manager-v1' (nothing was sent); send it as a string"
        )
    assert peers.agent_stats.calls["account-manager-v1"] == calls


async def test_an_integer_a_double_would_change_in_the_context_is_sent_and_warned_of(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers, caplog: pytest.LogCaptureFixture
) -> None:
    # The run's context is not the step's arguments: a run that worked while its agent
    # ignored a 64-bit id an earlier step returned goes on working, told of it.
    calls = peers.agent_stats.calls["account-manager-v1"]
    call = make_call("account-manager-v1", {"task": "t"}, context={"input": {"big id": 2**64}})
    with caplog.at_level(logging.WARNING, logger="activities.executors"):
        outcome = await registry.execute(call)
    assert outcome.output["text"] == "t"
    assert peers.agent_stats.calls["account-manager-v1"] == calls + 1
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "context.input['big id'] is 18446744073709551616, beyond ±2^53: A2A carries numbers"
        " as doubles, so agent 'account-manager-v1' receives another number there (run"
        f" {call.run_id}, step {call.node_name!r}, node run {call.node_run_id})"
    ], warned


async def test_a_returned_whole_number_of_2_to_the_53_or_more_is_warned_of(
    registry: ExecutorRegistry, make_call: MakeCall, caplog: pytest.LogCaptureFixture
) -> None:
    # 2^53 goes out exactly; coming back, it may as well have been 2^53 + 1 at the agent.
    call = make_call("account-manager-v1", {"acct": 2**53, "small": 2**53 - 1, "as text": "1"})
    with caplog.at_level(logging.WARNING, logger="activities.executors"):
        outcome = await registry.execute(call)
    assert outcome.output["config"] == {"acct": 2**53, "small": 2**53 - 1, "as text": "1"}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "A2A agent 'account-manager-v1' returned 1 whole number(s) of 2^53 or more, at"
        f" output.config.acct (run {call.run_id}, step {call.node_name!r}, node run"
        f" {call.node_run_id}): A2A carries numbers as doubles, so digits past 2^53 may have"
        " been lost in the agent's SDK before Trellis read them; have the agent send such"
        " numbers as strings"
    ], warned


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
    # most 100 ever worked at once. Each task works until 101 have worked at once, so a
    # loaded machine opening the streams slowly cannot end the first before the last
    # opens; with the bound back, they would all end at 60 s with 100 the most.
    config = {"seconds": 60.0, "untilWorking": 101}
    calls = [make_call("slow-agent", {"task": f"wide {i}", **config}) for i in range(120)]
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


async def test_a_task_completed_without_an_artifact_gives_no_output(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("quiet-agent"))
    assert outcome.output is None


async def test_a_task_completed_without_an_artifact_gives_its_closing_words(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("quiet-agent", {"say": "all done"}))
    assert outcome.output == "all done"


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


async def test_an_agent_that_never_answers_for_its_card_is_unreachable_soon(
    make_call: MakeCall, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It accepts connections and says nothing: without a bound the card fetch waited for
    # the step's timeout, and a pool trying it first never reached its next member.
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(a2a_executor, "CARD_TIMEOUT_SECONDS", 0.5)
    agent = A2AAgentSpec(name="silent", url=f"http://127.0.0.1:{port}/")
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=(agent,))))
    try:
        with pytest.raises(TransientError, match="'silent' unreachable"):
            await asyncio.wait_for(registry.execute(make_call("silent")), 10)
    finally:
        await registry.close()
        server.close()


async def test_input_required_is_a_failed_attempt_saying_so(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    before = peers.agent_stats.cancellations["input-agent"]
    with pytest.raises(TransientError, match=r"input-required.*Which plan"):
        await registry.execute(make_call("input-agent"))
    # The task the step leaves is cancelled, not left waiting at the agent for an answer.
    assert peers.agent_stats.cancellations["input-agent"] == before + 1


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


class _TaskBeats:
    """A step's heartbeat details, kept until one names the A2A task (after a second)."""

    def __init__(self) -> None:
        self.named = asyncio.Event()
        self.progress: dict[str, Any] = {}

    def beat(self, detail: dict[str, Any]) -> None:
        if TASK_PROGRESS_KEY in detail and not self.named.is_set():
            self.progress = dict(detail)
            self.named.set()


async def test_heartbeats_name_the_task_and_a_next_attempt_follows_it_instead_of_resending(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers
) -> None:
    # The first attempt's worker is lost while its task works: the next attempt, given
    # that attempt's last heartbeat, waits for the same task rather than sending again.
    calls = peers.agent_stats.calls["slow-agent"]
    beats = _TaskBeats()
    first = make_call("slow-agent", {"task": "once", "seconds": 2.5}, heartbeat=beats.beat)
    lost = asyncio.create_task(registry.execute(first))
    async with asyncio.timeout(5):
        await beats.named.wait()
    progress = beats.progress
    assert progress[TASK_PROGRESS_KEY]["agent"] == "slow-agent"

    again = make_call(
        "slow-agent",
        first.config,
        node_run_id=first.node_run_id,
        attempt=2,
        earlier_progress=progress,
    )
    outcome = await registry.execute(again)
    assert outcome.output["text"] == "once"
    assert outcome.output["run"]["attempt"] == 1  # the first attempt's message, answered
    assert peers.agent_stats.calls["slow-agent"] == calls + 1
    assert (await lost).output == outcome.output

    # Its task completed meanwhile: a third attempt answers with its result at once.
    third = make_call("slow-agent", first.config, attempt=3, earlier_progress=progress)
    started = asyncio.get_running_loop().time()
    assert (await registry.execute(third)).output == outcome.output
    assert asyncio.get_running_loop().time() - started < 1.0
    assert peers.agent_stats.calls["slow-agent"] == calls + 1


async def _task_of(registry: ExecutorRegistry, name: str) -> str:
    """The id of a task the agent ran to its end, asked for with the SDK's own client."""
    card = await registry.a2a.card(name)
    async with httpx.AsyncClient() as http:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        request = SendMessageRequest(
            message=Message(
                role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part("x")]
            )
        )
        async for event in client.send_message(request):
            return event.task.id
    raise AssertionError("no task")


@pytest.mark.parametrize(
    ("agent", "earlier"),
    [
        ("failing-agent", "failed"),  # a task that failed is not its answer
        ("account-manager-v1", "unknown"),  # the agent no longer knows the task
        ("account-manager-v1", "another agent's"),  # a pool's earlier agent
    ],
)
async def test_a_next_attempt_sends_anew_when_the_earlier_task_cannot_answer(
    registry: ExecutorRegistry, make_call: MakeCall, peers: Peers, agent: str, earlier: str
) -> None:
    owner, task_id = agent, "no-such-task"
    if earlier == "failed":
        task_id = await _task_of(registry, agent)
    elif earlier == "another agent's":
        owner, task_id = "failing-agent", await _task_of(registry, "failing-agent")
    calls = peers.agent_stats.calls[agent]
    call = make_call(
        agent,
        {"task": "anew"},
        attempt=2,
        earlier_progress={TASK_PROGRESS_KEY: {"agent": owner, "id": task_id}},
    )
    if agent == "failing-agent":
        with pytest.raises(TransientError, match="simulated failure"):
            await registry.execute(call)
    else:
        assert (await registry.execute(call)).output["text"] == "anew"
    assert peers.agent_stats.calls[agent] == calls + 1


def _refusing_posts(app: Any) -> Any:
    """`app` serving its card, but answering every POST (a JSON-RPC call) 502."""

    async def refusing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            await send({"type": "http.response.start", "status": 502, "headers": []})
            await send({"type": "http.response.body", "body": b"bad gateway"})
            return
        await app(scope, receive, send)

    return refusing


async def test_the_worker_log_never_quotes_an_agents_password(
    make_call: MakeCall, caplog: pytest.LogCaptureFixture
) -> None:
    # The agent's card names the URL with its password, as the catalog does; the errors
    # of `tasks/get` (an earlier attempt's task) and `message/send` quote that URL.
    port = free_port()
    base = f"http://bob:pa55word@127.0.0.1:{port}"
    spec = AgentSpec("gated")
    served = ServedApp(_refusing_posts(agents_app([spec], base, AgentStats())), port=port)
    served.start()
    agent = A2AAgentSpec(name="gated", url=f"{base}/agents/gated/")
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=(agent,))), http_policy=LOOPBACK_ALLOWED)
    earlier = {TASK_PROGRESS_KEY: {"agent": "gated", "id": "task-1"}}
    try:
        with caplog.at_level(logging.INFO, logger="activities.executors"):
            with pytest.raises(TransientError, match="502") as info:
                await registry.execute(make_call("gated", attempt=2, earlier_progress=earlier))
    finally:
        await registry.close()
        served.stop()
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("activities")]
    assert any("task-1" in line and "bob:***@" in line for line in logged), logged
    assert all("pa55word" not in line for line in [*logged, str(info.value)]), logged


@asynccontextmanager
async def _one_agent(spec: AgentSpec) -> AsyncIterator[ExecutorRegistry]:
    """A registry whose catalog holds one test agent of `spec`, served on a free port."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = ServedApp(agents_app([spec], base, AgentStats()), port=port).start()
    agent = A2AAgentSpec(name=spec.name, url=f"{base}/agents/{spec.name}/")
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=(agent,))), http_policy=LOOPBACK_ALLOWED)
    try:
        yield registry
    finally:
        await registry.close()
        served.stop()


async def test_an_agent_a_tool_shares_a_name_with_is_written_a2a_colon_name(
    make_call: MakeCall,
) -> None:
    # An audit: a step saved on `quick` broke once a server offered a tool `quick`; the
    # message advised "the A2A agent" (no key says that) and, a server being down, that the
    # tool "can only be" on it, "which did not answer" (retryably, though no answer helps).
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = ServedApp(agents_app([AgentSpec("quick")], base, AgentStats()), port=port).start()
    file = CatalogFile(
        servers=(
            McpServerSpec(id="open", url=f"http://127.0.0.1:{free_port()}/mcp", tools=["quick"]),
            McpServerSpec(id="late", url=f"http://127.0.0.1:{free_port()}/mcp"),
        ),
        agents=(A2AAgentSpec(name="quick", url=f"{base}/agents/quick/"),),
    )
    registry = ExecutorRegistry(Catalog(file), http_policy=LOOPBACK_ALLOWED)
    try:
        await registry.catalog.start()
        with pytest.raises(PermanentError) as ambiguous:
            await registry.execute(make_call("quick", {"text": "x"}))
        assert str(ambiguous.value) == (
            "unknown executorKey: 'quick' is ambiguous; write one of: open/quick, a2a:quick"
        )
        outcome = await registry.execute(make_call("a2a:quick", {"text": "named"}))
        assert outcome.output["agent"] == "quick"
        assert outcome.output["config"] == {"text": "named"}
        assert outcome.resolved_executor == {"kind": "a2a", "key": "quick"}
        with pytest.raises(PermanentError) as unknown:
            await registry.execute(make_call("a2a:ghost", {}))
        assert str(unknown.value) == (
            "unknown executorKey: no A2A agent 'ghost' in the executor catalog"
            " (its agents are 'quick')"
        )
    finally:
        await registry.close()
        await registry.catalog.close()
        served.stop()


async def test_an_agent_serving_only_a2as_rest_binding_is_called_over_it(
    make_call: MakeCall,
) -> None:
    # The client spoke JSON-RPC only: "no compatible transports found", retried each time.
    async with _one_agent(AgentSpec("rested", binding="HTTP+JSON")) as registry:
        outcome = await registry.execute(make_call("rested", {"text": "over REST"}))
    assert outcome.output["agent"] == "rested"
    assert outcome.output["config"] == {"text": "over REST"}, outcome.output


async def test_an_agent_serving_no_binding_trellis_speaks_is_permanent(
    make_call: MakeCall,
) -> None:
    async with _one_agent(AgentSpec("grpc-only", binding="GRPC")) as registry:
        with pytest.raises(PermanentError, match="serves only GRPC; Trellis speaks JSONRPC and"):
            await registry.execute(make_call("grpc-only", {"text": "x"}))


async def test_an_agent_whose_url_carries_a_query_is_called_with_it(
    peers: Peers, make_call: MakeCall
) -> None:
    # The catalog has not fetched the card (never started): the executor fetches it, at
    # `…/signed-agent/.well-known/agent-card.json?sig=…`, and calls the URL the card gives.
    agent = A2AAgentSpec(name="signed-agent", url=peers.agent_url("signed-agent"))
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=(agent,))))
    try:
        outcome = await registry.execute(make_call("signed-agent", {"task": "Sign"}))
    finally:
        await registry.close()
    assert outcome.output["agent"] == "signed-agent"
    assert outcome.output["text"] == "Sign"
