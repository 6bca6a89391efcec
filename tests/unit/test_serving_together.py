"""Test support: servers started and stopped together leave the process as they found it."""

from __future__ import annotations

import signal

import httpx
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.support.server import serving_all


def _app(name: str) -> Starlette:
    return Starlette(routes=[Route("/", lambda _: PlainTextResponse(name))])


async def test_each_app_answers_on_its_own_url() -> None:
    async with serving_all(_app("a"), _app("b"), _app("c")) as urls, httpx.AsyncClient() as http:
        assert [(await http.get(url)).text for url in urls] == ["a", "b", "c"]


async def test_the_signal_handlers_are_as_they_were_after_servers_stopped_together() -> None:
    # uvicorn puts back the handlers it found as each server stops; out of order, a stopped
    # server's handler stayed, and sse-starlette took it for a server shutting down.
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    for _ in range(5):
        async with serving_all(_app("a"), _app("b"), _app("c")):
            assert signal.getsignal(signal.SIGTERM) != before[0]  # uvicorn's, while serving
        assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
