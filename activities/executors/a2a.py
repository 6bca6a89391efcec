"""A2A agent steps: send the rendered config, follow the task to its end, map its artifacts.

The message has a text part (`config.message` or `config.task`, when given) and a data
part `{"config": …, "context": …, "run": {…}}`. The task is followed by streaming when the
card allows it, else by polling, heartbeating throughout. A cancelled step cancels the
remote task (`tasks/cancel`) before re-raising.

The task's id goes out with every heartbeat. When an attempt is lost with its worker, the
next attempt reads that task (`tasks/get`) and follows it by polling, rather than sending
the message again: a completed task gives its result, one still working is awaited. A
task that ended any other way, or that the agent no longer knows, is sent anew. The task
is noted in the store too (a2a_task_notes.py): a run cancelled while no worker follows its
step has a worker's sweep cancel it (`cancel_task`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any, cast

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_data_part, new_text_part
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import TransportProtocol
from google.protobuf.json_format import MessageToDict

from activities.executors.a2a_errors import describe_a2a_error
from activities.executors.a2a_numbers import doubtful_numbers, inexact_integer
from activities.executors.a2a_task_notes import TaskNotes
from activities.executors.agent_card import fetch_card
from activities.executors.agent_credentials import calling
from activities.executors.base import (
    PermanentError,
    StepCall,
    StepOutcome,
    TransientError,
    payload_config,
)
from activities.executors.catalog import Catalog
from activities.executors.heartbeat import heartbeating
from activities.executors.tracing import CallTracer, url_attribute

log = logging.getLogger(__name__)

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
# The heartbeat detail naming the task this attempt follows: {"agent": …, "id": …}.
TASK_PROGRESS_KEY = "a2aTask"
# The protocol bindings Trellis speaks, in the order it prefers them when an agent serves
# several: JSON-RPC, else A2A's REST binding (gRPC needs a channel the catalog cannot give).
BINDINGS = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)
POLL_SECONDS = (0.1, 0.25, 0.5, 1.0)
# How long a stream may stay open after its task's last event before it is closed (read
# to its end meanwhile, in the background: the step does not wait for it).
DRAIN_SECONDS = 2.0
CANCEL_TIMEOUT_SECONDS = 5.0
# A card fetch is bounded on its own: the agents' client has no read timeout (a task's
# stream may stay silent long), and an agent that never answers must fail the call soon,
# so a pool moves on to its next member instead of waiting for the step's timeout.
CARD_TIMEOUT_SECONDS = 10.0
# The agents' HTTP connections: as many as the steps calling them at once (the worker's
# activity limit bounds that; httpx's default of 100 made the 101st stream wait for one
# to end). Up to 20 idle ones are kept (httpx's default: its pool compares every idle
# connection with all the others whenever it hands one out, so a large idle pool costs
# more CPU than reconnecting to an agent on the same host), each until idle 4 s, not
# httpx's 5: a server's own idle timeout (uvicorn's and Node's default is 5 s) must not
# close a connection just as a request goes out on it.
CONNECTION_LIMITS = httpx.Limits(
    max_connections=None, max_keepalive_connections=20, keepalive_expiry=4.0
)


class A2AExecutor:
    """Calls catalog agents; keeps one client per agent, rebuilt when its card changes."""

    def __init__(
        self, catalog: Catalog, http: httpx.AsyncClient, calls: CallTracer | None = None
    ) -> None:
        self._catalog = catalog
        self._http = http
        # `http` sends the current trace context with every request (the registry's hook),
        # and gives a request the called agent's credentials when it goes to the agent's
        # catalog origin (its `agent_credentials` auth; the agent is named by `calling`).
        self._calls = calls or CallTracer()
        # Each agent's client, with the card it was built from (`_client`).
        self._clients: dict[str, tuple[AgentCard, Client]] = {}
        # Streams read to their end after their step had its answer (see `_drain`).
        self._draining: set[asyncio.Task[None]] = set()

    async def drained(self) -> None:
        """Until the streams draining now are read to their ends (or given up on)."""
        await asyncio.gather(*self._draining, return_exceptions=True)

    async def close(self) -> None:
        """Stop reading the streams still draining (their steps have their answers)."""
        for drain in list(self._draining):
            drain.cancel()
        await self.drained()

    def _drain(self, stream: AsyncGenerator[StreamResponse, None]) -> None:
        """Read the rest of a stream whose answer is in hand, without holding its step.

        The server ends an A2A stream right after the task's last event; a response read
        to its end leaves its connection to the next call, one closed early takes the
        connection with it (measured: 45 of 100 calls connected anew; at 50 calls at once
        about 10 more of 100 when the step waited up to 50 ms for the end, as it did).
        """
        drain = asyncio.create_task(_read_to_end(stream))
        self._draining.add(drain)
        drain.add_done_callback(self._draining.discard)

    async def card(self, name: str) -> AgentCard:
        """The agent's card: the catalog's copy, else fetched now (and remembered)."""
        card = self._catalog.card(name)
        if card is None:
            endpoint = self._catalog.agent_endpoint(name)
            with calling(endpoint):
                kwargs: dict[str, object] = {"timeout": CARD_TIMEOUT_SECONDS}
                card = await fetch_card(self._http, endpoint.url, kwargs)
            self._catalog.remember_card(name, card)
        return card

    async def execute(self, call: StepCall, name: str) -> StepOutcome:
        output = await self.call(call, name)
        return StepOutcome(output=output, resolved_executor={"kind": "a2a", "key": name})

    async def call(self, call: StepCall, name: str) -> Any:
        """Run one agent to a terminal state and return its output; raise on failure."""
        endpoint = self._catalog.agent_endpoint(name)
        attributes = {"a2a.agent.name": name, "url.full": url_attribute(endpoint.url)}
        with self._calls.span(f"A2A {name}", attributes), calling(endpoint):
            return await self._call(call, name)

    async def _call(self, call: StepCall, name: str) -> Any:
        message = _message(call, name)  # first: it may refuse before anything is sent
        card = None
        try:
            card = await self.card(name)
            client = self._client(name, card)
        except Exception as exc:
            reason = self._catalog.redacted(describe_a2a_error(exc))
            served = {i.protocol_binding for i in card.supported_interfaces} if card else set()
            if served and not served & set(BINDINGS):
                # The card says so: no attempt can reach it until the agent serves another.
                raise PermanentError(
                    f"A2A agent {name!r} serves only {', '.join(sorted(served))}; Trellis"
                    f" speaks {' and '.join(BINDINGS)}"
                ) from None
            raise TransientError(f"A2A agent {name!r} unreachable: {reason}") from None
        request = SendMessageRequest(message=message)
        # Without streaming, ask for the task at once and poll it (so it can be cancelled).
        request.configuration.return_immediately = not card.capabilities.streaming
        progress: dict[str, Any] = {"waitingFor": f"A2A agent {name}"}
        notes = TaskNotes(call, name)
        try:
            # Each beat also says the noted tasks are still followed (the sweep leaves them).
            async with heartbeating(call, progress, on_beat=notes.still_following):
                reply = await self._resumed(client, call, name, progress, notes)
                if reply is None:
                    reply = await self._follow(client, request, name, progress, notes)
        except (TransientError, PermanentError):
            raise
        except Exception as exc:
            self._clients.pop(name, None)  # a broken client is rebuilt from a fresh card
            reason = self._catalog.redacted(describe_a2a_error(exc))
            raise TransientError(f"A2A agent {name!r} call failed: {reason}") from None
        if isinstance(reply, Task) and reply.status.state in INTERRUPTED:
            # The step cannot answer it and goes on without it: the agent need not wait.
            await self._cancel_remote(client, reply.id, name, notes)
        elif isinstance(reply, Task):
            await notes.done(reply.id)  # it ended: nothing to cancel
        output = _outcome(name, reply, self._catalog.redacted)
        if doubtful := doubtful_numbers(output, "output"):
            log.warning(
                "A2A agent %r returned %d whole number(s) of 2^53 or more, at %s (run %s,"
                " step %r, node run %s): A2A carries numbers as doubles, so digits past 2^53"
                " may have been lost in the agent's SDK before Trellis read them; have the"
                " agent send such numbers as strings",
                name,
                len(doubtful),
                ", ".join(doubtful[:5]),
                call.run_id,
                call.node_name,
                call.node_run_id,
            )
        return output

    def _client(self, name: str, card: AgentCard) -> Client:
        """The agent's client for its current card: built anew when the catalog's card
        changed (a refresh saw its URL or binding move), since a client calls where the
        card it was built from said; the old one kept calling there until a call failed."""
        held = self._clients.get(name)
        if held is not None and (held[0] is card or held[0] == card):
            self._clients[name] = (card, held[1])  # the same card: next time, by identity
            return held[1]
        config = ClientConfig(
            httpx_client=self._http,
            streaming=True,
            # JSON-RPC wherever the agent serves it, else A2A's REST binding.
            supported_protocol_bindings=list(BINDINGS),
            use_client_preference=True,
        )
        client = ClientFactory(config).create(card)
        self._clients[name] = (card, client)
        return client

    async def _cancel_remote(
        self, client: Client, task_id: str, name: str, notes: TaskNotes
    ) -> None:
        if not await notes.done(task_id):
            log.info("A2A task %s of agent %r is cancelled by a worker's sweep", task_id, name)
            return
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT_SECONDS):
                request = CancelTaskRequest(id=task_id)
                await client.cancel_task(request)
        except Exception as exc:  # best effort: the step is cancelled either way
            reason = self._catalog.redacted(describe_a2a_error(exc))
            log.warning("could not cancel A2A task %s of agent %r: %s", task_id, name, reason)

    def redacted(self, text: str) -> str:
        """`text` with the catalog's URLs and credentials masked (`Catalog.redacted`)."""
        return self._catalog.redacted(text)

    async def cancel_task(self, name: str, task_id: str) -> None:
        """Send `tasks/cancel` for a task of agent `name`, as its step would (the card, the
        client and the catalog's credentials it uses; no service token: no caller is acted
        for). Raises what the agent answered or the call met (activities/a2a_task_sweep.py
        tells them apart)."""
        endpoint = self._catalog.agent_endpoint(name)
        with calling(endpoint):
            client = self._client(name, await self.card(name))
            async with asyncio.timeout(CANCEL_TIMEOUT_SECONDS):
                await client.cancel_task(CancelTaskRequest(id=task_id))

    async def _resumed(
        self,
        client: Client,
        call: StepCall,
        name: str,
        progress: dict[str, Any],
        notes: TaskNotes,
    ) -> Task | Message | None:
        """The task an earlier attempt of this step started with this agent, followed to its
        end; None when there is none to pick up (then the message is sent)."""
        earlier = call.earlier_progress.get(TASK_PROGRESS_KEY)
        if not isinstance(earlier, dict) or earlier.get("agent") != name or not earlier.get("id"):
            return None
        task_id = str(earlier["id"])
        try:
            read = await client.get_task(GetTaskRequest(id=task_id))
        except Exception as exc:  # an agent that restarted may have forgotten it
            reason = self._catalog.redacted(describe_a2a_error(exc))  # it may quote the agent's URL
            log.info("A2A task %s of an earlier attempt: %s", task_id, reason)
            return None
        state = read.status.state
        if state != TaskState.TASK_STATE_COMPLETED and state in TERMINAL | INTERRUPTED:
            if state in TERMINAL:
                await notes.settle(task_id)  # the earlier attempt's note: it ended
            return None  # it did not succeed: this attempt tries again
        log.info("A2A task %s of an earlier attempt is %s: following it", task_id, state)
        progress[TASK_PROGRESS_KEY] = {"agent": name, "id": task_id}
        if state == TaskState.TASK_STATE_COMPLETED:
            await notes.settle(task_id)  # the earlier attempt's note, if it wrote one
            return read
        # Noted now (again, maybe): the earlier attempt may have been lost before it noted it.
        notes.following(task_id, at_once=True)
        try:
            return await self._poll(client, task_id)
        except asyncio.CancelledError:
            await self._cancel_remote(client, task_id, name, notes)
            raise

    async def _poll(self, client: Client, task_id: str) -> Task:
        """The task, read with `tasks/get` until it ends or is interrupted."""
        for delay in _poll_delays():
            read = await client.get_task(GetTaskRequest(id=task_id))
            if read.status.state in TERMINAL | INTERRUPTED:
                return read
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _follow(
        self,
        client: Client,
        request: SendMessageRequest,
        name: str,
        progress: dict[str, Any],
        notes: TaskNotes,
    ) -> Task | Message:
        """The agent's reply: a message, or its task once terminal or interrupted.

        The task is assembled from the stream (its snapshot, artifact chunks merged by the
        SDK's own `append_artifact_to_task`, status updates), so a streamed task costs no
        further request; it is read back with `tasks/get` only when the stream ends
        without carrying it whole (no stream, an early end, or a completion before any
        artifact).
        """
        task: Task | None = None
        task_id = ""
        state = TaskState.TASK_STATE_UNSPECIFIED
        try:
            stream = cast(
                AsyncGenerator[StreamResponse, None],
                client.send_message(request),
            )
            answered = False  # then the rest is drained; else the stream is closed here
            try:
                async for event in stream:
                    if event.HasField("message"):
                        answered = True
                        return event.message
                    if event.HasField("task"):
                        task = Task()
                        task.CopyFrom(event.task)
                        task_id, state = task.id, task.status.state
                    elif event.HasField("artifact_update"):
                        update = event.artifact_update
                        task = task or Task(id=update.task_id, context_id=update.context_id)
                        append_artifact_to_task(task, update)
                        task_id = update.task_id
                    elif event.HasField("status_update"):
                        status_update = event.status_update
                        task_id, state = status_update.task_id, status_update.status.state
                        if task is not None:
                            task.status.CopyFrom(status_update.status)
                    if task_id and TASK_PROGRESS_KEY not in progress:
                        progress[TASK_PROGRESS_KEY] = {"agent": name, "id": task_id}
                        notes.following(task_id)
                    if state in TERMINAL | INTERRUPTED:
                        answered = True
                        break
            finally:
                if answered:
                    self._drain(stream)
                else:
                    await stream.aclose()
            if task is not None and state in TERMINAL | INTERRUPTED:
                if task.artifacts or state != TaskState.TASK_STATE_COMPLETED:
                    return task
            if not task_id:
                raise TransientError("the agent answered with neither a task nor a message")
            return await self._poll(client, task_id)
        except asyncio.CancelledError:
            if task_id and state not in TERMINAL:
                await self._cancel_remote(client, task_id, name, notes)
            raise


async def _read_to_end(stream: AsyncGenerator[StreamResponse, None]) -> None:
    """Read a stream to its end, for at most DRAIN_SECONDS, then close it."""
    try:
        with contextlib.suppress(Exception):  # the step has its answer either way
            async with asyncio.timeout(DRAIN_SECONDS):
                async for _ in stream:
                    pass
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()


def _poll_delays() -> Iterator[float]:
    yield from POLL_SECONDS
    while True:
        yield POLL_SECONDS[-1]


def _message(call: StepCall, name: str) -> Message:
    parts: list[Part] = []
    text = call.config.get("message") or call.config.get("task")
    if isinstance(text, str) and text:
        parts.append(new_text_part(text))
    run = {
        "runId": call.run_id,
        "workflowId": call.workflow_id,
        "nodeId": call.node_id,
        "nodeName": call.node_name,
        "nodeRunId": call.node_run_id,
        "attempt": call.attempt,
    }
    data = {"config": payload_config(call.config), "context": call.context, "run": run}
    # The step's own arguments are refused; the run's context (earlier steps' outputs, a
    # 64-bit id an MCP tool returned) goes, with a warning: a run whose agent never reads
    # that field worked before, and would fail for a number it does not use.
    if found := inexact_integer({"config": data["config"]}, ""):
        path, number = found
        raise PermanentError(
            f"{path} is {number}, beyond ±2^53: A2A carries numbers as doubles, which would"
            f" send another number to agent {name!r} (nothing was sent); send it as a string"
        )
    if found := inexact_integer(call.context, "context"):
        path, number = found
        log.warning(
            "%s is %d, beyond ±2^53: A2A carries numbers as doubles, so agent %r receives"
            " another number there (run %s, step %r, node run %s)",
            path,
            number,
            name,
            call.run_id,
            call.node_name,
            call.node_run_id,
        )
    parts.append(new_data_part(data))
    return Message(
        role=Role.ROLE_USER,
        message_id=f"{call.node_run_id}:{call.attempt}:{name}",
        parts=parts,
        # The message id changes per attempt and agent; the idempotency key does not.
        metadata=call.request_meta(),
    )


def _outcome(name: str, reply: Task | Message, redact: Callable[[str], str]) -> Any:
    """The reply's output; or the error its state means, the agent's words in it redacted
    (an agent may quote the key its request carried). An output is the user's data, as is."""
    if isinstance(reply, Message):
        return _parts_value(list(reply.parts))
    state, why = reply.status.state, redact(_status_text(reply.status))
    if state == TaskState.TASK_STATE_COMPLETED:
        values = [_parts_value(list(a.parts)) for a in reply.artifacts]
        if not values:  # no artifact: the agent's closing words, when it said any
            return _message_text(reply.status) or None
        return values[0] if len(values) == 1 else values
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        raise TransientError(
            f"A2A agent {name!r} asked for input (input-required), which a step cannot give: {why}"
        )
    if state == TaskState.TASK_STATE_AUTH_REQUIRED:
        raise TransientError(f"A2A agent {name!r} asked for authentication (auth-required): {why}")
    if state == TaskState.TASK_STATE_REJECTED:
        raise PermanentError(f"A2A agent {name!r} rejected the task: {why}")
    if state == TaskState.TASK_STATE_CANCELED:
        raise TransientError(f"A2A agent {name!r} cancelled the task: {why}")
    raise TransientError(f"A2A agent {name!r} failed: {why}")


def _status_text(status: TaskStatus) -> str:
    return _message_text(status) or "(no message)"


def _message_text(status: TaskStatus) -> str:
    if not status.HasField("message"):
        return ""
    return get_message_text(status.message, delimiter=" ").strip()


def _parts_value(parts: list[Part]) -> Any:
    values = [_part_value(p) for p in parts]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _part_value(part: Part) -> Any:
    if part.HasField("text"):
        return part.text
    if part.HasField("data"):
        return _whole_numbers(MessageToDict(part.data))
    if part.HasField("url"):
        value = {"url": part.url}
    else:
        value = {"raw": base64.b64encode(part.raw).decode()}
    # A file part's, raw or by URL; none given, none shown (protobuf says "" for unset).
    if part.media_type:
        value["mediaType"] = part.media_type
    if part.filename:
        value["filename"] = part.filename
    return value


def _whole_numbers(value: Any) -> Any:
    """protobuf Values carry every number as a double; give whole numbers back as ints
    (one of 2^53 or more may not be the agent's: `_call` warns of it, a2a_numbers.py)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value
