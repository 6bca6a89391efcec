"""An agent whose card moves (its `url` names another port) is called where the card the
catalog refreshed names, from the next call on: the worker's client follows the card."""

from __future__ import annotations

from typing import Any

from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.serving import ServedApp, free_port


class Moving:
    """The agent as served at its catalog URL: itself, until `moved`; then only its card,
    which names the other port, and 404 for anything else (its messages go there now)."""

    def __init__(self, here: Any, there: Any) -> None:
        self.here, self.there, self.moved = here, there, False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.moved or scope["type"] != "http":
            await self.here(scope, receive, send)
        elif "/.well-known/" in scope["path"]:
            await self.there(scope, receive, send)  # the card as the new port serves it
        else:
            await PlainTextResponse("gone", status_code=404)(scope, receive, send)


async def test_a_call_after_the_card_moved_goes_where_the_refreshed_card_says(
    make_call: MakeCall,
) -> None:
    spec, ports = AgentSpec("mover"), (free_port(), free_port())
    stats = (AgentStats(), AgentStats())
    here, there = (
        agents_app([spec], f"http://127.0.0.1:{port}", seen)
        for port, seen in zip(ports, stats, strict=True)
    )
    moving = Moving(here, there)
    served = [ServedApp(moving, port=ports[0]).start(), ServedApp(there, port=ports[1]).start()]
    agent = A2AAgentSpec(name="mover", url=f"http://127.0.0.1:{ports[0]}/agents/mover/")
    catalog = Catalog(CatalogFile(agents=(agent,)), refresh_seconds=3600)
    registry = ExecutorRegistry(catalog)
    try:
        await catalog.refresh()
        first = await registry.execute(make_call("mover", {"task": "before"}))
        moving.moved = True
        await catalog.refresh()  # what the worker's refresh loop does every interval
        second = await registry.execute(make_call("mover", {"task": "after"}))
    finally:
        await registry.close()
        await catalog.close()
        for app in served:
            app.stop()
    assert (first.output["text"], second.output["text"]) == ("before", "after")
    assert (stats[0].calls["mover"], stats[1].calls["mover"]) == (1, 1)
