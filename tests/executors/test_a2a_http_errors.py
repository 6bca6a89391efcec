"""An agent answering an HTTP error status: the step's error names the status without
httpx's "For more information check: https://developer.mozilla.org/…", and a 401 or 403
(the agent refusing its credentials) says to check the catalog entry's headers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from activities.executors.a2a_errors import REFUSED_HINT
from activities.executors.base import TransientError
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.serving import ServedApp, free_port


def _answering(app: Any, status: int, card_too: bool) -> Any:
    """The agent's app, answering `status` to every message (and its card, if `card_too`)."""

    async def answering(scope: Scope, receive: Receive, send: Send) -> None:
        card = "/.well-known/" in scope.get("path", "")
        if scope["type"] == "http" and (card_too or not card):
            await PlainTextResponse("no", status_code=status)(scope, receive, send)
            return
        await app(scope, receive, send)

    return answering


@asynccontextmanager
async def _agent_answering(status: int, card_too: bool) -> AsyncIterator[Catalog]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = _answering(agents_app([AgentSpec("gated")], base, AgentStats()), status, card_too)
    served = ServedApp(app, port=port).start()
    agent = A2AAgentSpec(name="gated", url=f"{base}/agents/gated/")
    try:
        yield Catalog(CatalogFile(agents=(agent,)), refresh_seconds=3600)
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("status", "card_too", "hinted"),
    [(401, True, True), (403, False, True), (500, False, False)],
    ids=["card-401", "message-403", "message-500"],
)
async def test_an_http_error_names_its_status_without_boilerplate(
    make_call: MakeCall, status: int, card_too: bool, hinted: bool
) -> None:
    async with _agent_answering(status, card_too) as catalog:
        registry = ExecutorRegistry(catalog)
        try:
            await catalog.refresh()
            with pytest.raises(TransientError) as failed:
                await registry.execute(make_call("gated", {"task": "x"}))
        finally:
            await registry.close()
            await catalog.close()
    said = [str(failed.value)] + ([catalog.agent("gated").error or ""] if card_too else [])
    for text in said:
        assert f"{status}" in text, text
        assert "developer.mozilla.org" not in text and "For more information" not in text, text
        assert text.endswith(REFUSED_HINT) == hinted, text
