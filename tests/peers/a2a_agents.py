"""Test A2A agents (a2a-sdk servers), all mounted under `/agents/<name>/` of one Starlette app.

Kinds: `echo` (completes with one data artifact of what it received), `fail` (task
failed), `leak` (task failed, quoting the header its request carried that its `leaks`
names, `X-Api-Key` by default: an agent echoing its key), `files` (completes with one
artifact of six file parts: raw and by URL, each with and without a filename, and each
once without a media type), `slow` (works `config.seconds`, default 3, or until
`config.untilWorking` of its tasks have worked at once; counts cancellations, and answers
a `tasks/cancel` `config.cancelSeconds` late: a peer slow to stop), `input` (asks for
input), `reject` (rejects), `bare` (completes without an artifact). Each has its own
card and skills. An agent with a `query` answers only requests whose query string carries
it (a signed URL: `…/agents/<name>?sig=…`), the card's request included; others get 403.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from a2a.helpers import (
    get_data_parts,
    new_data_part,
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.rest_routes import create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Task,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class AgentSpec:
    name: str
    kind: str = "echo"
    skills: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (id, description, tags)
    streaming: bool = True
    # Hold a stream open this long after its last event (a server that does not end it).
    linger_seconds: float = 0.0
    # Required in every request's query string ("sig=abc"): the agent's URL carries it.
    query: str = ""
    # The protocol binding it serves: A2A's JSON-RPC, or its REST one ("HTTP+JSON").
    binding: str = "JSONRPC"
    # The request header a `leak` agent quotes (lower case).
    leaks: str = "x-api-key"


@dataclass
class AgentStats:
    calls: Counter[str] = field(default_factory=Counter)
    cancellations: Counter[str] = field(default_factory=Counter)
    # `tasks/get` requests by agent: a client following a stream needs none.
    task_reads: Counter[str] = field(default_factory=Counter)
    # The client port of every request, by agent: one port per connection the client made.
    client_ports: defaultdict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    # Tasks of the slow agent working at once: now, and the most seen.
    working: Counter[str] = field(default_factory=Counter)
    most_working: Counter[str] = field(default_factory=Counter)
    # How long the slow agent holds its answer to each task's `tasks/cancel`, by task id.
    cancel_holds: dict[str, float] = field(default_factory=dict)
    # Every `tasks/cancel` request, by agent: the task ids asked for, answered or refused.
    cancel_requests: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    # The task each node run's message started (by the `run.nodeRunId` it carried).
    task_of_node_run: dict[str, str] = field(default_factory=dict)


class CountingHandler(DefaultRequestHandler):
    """The SDK's handler, counting the `tasks/get` requests it answers."""

    def __init__(self, name: str, stats: AgentStats, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name, self.stats = name, stats

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        self.stats.task_reads[self.name] += 1
        return await super().on_get_task(params, context)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        self.stats.cancel_requests[self.name].append(params.id)
        return await super().on_cancel_task(params, context)


class PeerAgent(AgentExecutor):
    """One behaviour per kind; records calls and cancellations in shared stats."""

    def __init__(self, spec: AgentSpec, stats: AgentStats) -> None:
        self.spec = spec
        self.stats = stats

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        self.stats.calls[self.spec.name] += 1
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        data = get_data_parts(context.message.parts)
        received: dict[str, Any] = data[0] if data and isinstance(data[0], dict) else {}
        node_run_id = (received.get("run") or {}).get("nodeRunId")
        if node_run_id:
            self.stats.task_of_node_run[node_run_id] = task.id
        kind = self.spec.kind

        def say(text: str) -> Any:
            return new_text_message(text, context_id=task.context_id, task_id=task.id)

        if kind == "fail":
            await updater.failed(say(f"{self.spec.name} could not do it: simulated failure"))
        elif kind == "leak":
            key = context.call_context.state.get("headers", {}).get(self.spec.leaks)
            await updater.failed(say(f"upstream refused key {key}"))
        elif kind == "input":
            await updater.requires_input(say("Which plan should the account get?"))
        elif kind == "reject":
            await updater.reject(say(f"{self.spec.name} does not handle this kind of task"))
        elif kind == "files":
            parts = [
                new_raw_part(b"\x89PNG", media_type="image/png", filename="chart.png"),
                new_raw_part(b"plain", media_type="text/plain"),
                new_url_part("https://files.example/r.pdf", "application/pdf", "report.pdf"),
                new_url_part("https://files.example/x", media_type="application/pdf"),
                new_raw_part(b"blob"),
                new_url_part("https://files.example/notes", filename="notes.txt"),
            ]
            await updater.add_artifact(parts, name="files")
            await updater.complete()
        elif kind == "bare":
            # Completes without an artifact, with `config.say` as its closing words if given.
            words = (received.get("config") or {}).get("say")
            await updater.complete(say(words) if words else None)
        else:
            if kind == "slow":
                config = received.get("config") or {}
                seconds = float(config.get("seconds", 3))
                # `untilWorking`: end early once that many tasks have worked at once.
                crowd = int(config.get("untilWorking", 0)) or None
                name, stats = self.spec.name, self.stats
                stats.cancel_holds[task.id] = float(config.get("cancelSeconds", 0))
                stats.working[name] += 1
                stats.most_working[name] = max(stats.most_working[name], stats.working[name])
                try:
                    deadline = asyncio.get_running_loop().time() + seconds
                    while asyncio.get_running_loop().time() < deadline:
                        if crowd is not None and stats.most_working[name] >= crowd:
                            break
                        await asyncio.sleep(min(0.05, seconds))
                finally:
                    stats.working[name] -= 1
            output = {
                "agent": self.spec.name,
                "text": context.get_user_input(),
                "config": received.get("config"),
                "run": received.get("run"),
                "metadata": MessageToDict(context.message.metadata),
            }
            await updater.add_artifact([new_data_part(output)], name="result")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.stats.cancellations[self.spec.name] += 1
        assert context.task_id is not None and context.context_id is not None
        await asyncio.sleep(self.stats.cancel_holds.pop(context.task_id, 0.0))
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def agent_card(spec: AgentSpec, url: str) -> AgentCard:
    return AgentCard(
        name=spec.name,
        description=f"Trellis test agent ({spec.kind})",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=spec.binding, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=spec.streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/json"],
        skills=[
            AgentSkill(id=sid, name=sid.replace("-", " "), description=desc, tags=list(tags))
            for sid, desc, tags in spec.skills
        ]
        or [AgentSkill(id=spec.kind, name=spec.kind, description=spec.kind, tags=[spec.kind])],
    )


def agents_app(specs: list[AgentSpec], base_url: str, stats: AgentStats) -> Starlette:
    """One app serving every agent at `<base_url>/agents/<name>/`."""
    mounts = []
    for spec in specs:
        url = f"{base_url}/agents/{spec.name}/" + (f"?{spec.query}" if spec.query else "")
        card = agent_card(spec, url)
        handler = CountingHandler(
            spec.name,
            stats,
            agent_executor=PeerAgent(spec, stats),
            task_store=InMemoryTaskStore(),
            agent_card=card,
        )
        served_routes = (
            create_rest_routes(handler)
            if spec.binding == "HTTP+JSON"
            else create_jsonrpc_routes(handler, rpc_url="/")
        )
        routes = create_agent_card_routes(card) + served_routes
        app = _served(spec, Starlette(routes=routes), stats)
        mounts.append(Mount(f"/agents/{spec.name}", app=app))
    return Starlette(routes=mounts)


def _served(spec: AgentSpec, app: ASGIApp, stats: AgentStats) -> ASGIApp:
    """The agent's app, noting each request's connection and lingering if told to."""

    required = set(parse_qsl(spec.query))

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not required <= set(
            parse_qsl(scope["query_string"].decode("latin-1"))
        ):
            await PlainTextResponse("signature missing", status_code=403)(scope, receive, send)
            return
        if scope["type"] == "http" and scope.get("client"):
            stats.client_ports[spec.name].append(scope["client"][1])
        streaming = False

        async def sending(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start":
                streaming = (b"content-type", b"text/event-stream") in [
                    (k.lower(), v.split(b";")[0]) for k, v in message.get("headers", [])
                ]
            ending = message["type"] == "http.response.body" and not message.get("more_body")
            if streaming and ending and spec.linger_seconds:
                await asyncio.sleep(spec.linger_seconds)
            await send(message)

        await app(scope, receive, sending)

    return served
