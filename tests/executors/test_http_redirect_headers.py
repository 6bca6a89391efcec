"""builtin:http sends the step's own headers (its config's `headers`, often credentials) to
the URL's origin only: a redirect to another origin (scheme, host or port) goes without
them. Two real servers on 127.0.0.1, at two ports, are the two origins."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from activities.executors.builtin import BuiltinExecutor
from tests.executors.conftest import MakeCall
from tests.peers.serving import ServedApp
from tests.support.loopback import LOOPBACK_ALLOWED

STEP_HEADERS = {"X-Api-Key": "k-secret", "X-Custom-Token": "t-secret", "Authorization": "B s"}


@dataclass
class Origins:
    first: str
    second: str


def _app() -> Starlette:
    async def redirect(request: Request) -> Response:
        return RedirectResponse(request.query_params["to"], status_code=302)

    async def redirect307(request: Request) -> Response:
        return RedirectResponse(request.query_params["to"], status_code=307)

    async def headers(request: Request) -> Response:
        return JSONResponse({k.lower(): v for k, v in request.headers.items()})

    return Starlette(
        routes=[
            Route("/redirect", redirect),
            Route("/redirect307", redirect307, methods=["POST"]),
            Route("/headers", headers, methods=["GET", "POST"]),
        ]
    )


@pytest.fixture(scope="module")
def origins() -> Iterator[Origins]:
    first, second = ServedApp(_app()).start(), ServedApp(_app()).start()
    yield Origins(first.base_url, second.base_url)
    second.stop()
    first.stop()


async def seen(make_call: MakeCall, url: str) -> dict[str, str]:
    """The headers the request's last hop arrived with."""
    executor = BuiltinExecutor(LOOPBACK_ALLOWED)
    try:
        outcome = await executor.execute(
            make_call("builtin:http", {"url": url, "headers": STEP_HEADERS})
        )
    finally:
        await executor.close()
    assert outcome.output["status"] == 200
    body: dict[str, str] = outcome.output["body"]
    return body


async def test_a_redirect_to_another_origin_carries_none_of_the_steps_headers(
    origins: Origins, make_call: MakeCall
) -> None:
    got = await seen(make_call, f"{origins.first}/redirect?to={origins.second}/headers")
    assert got["host"] == origins.second.removeprefix("http://")
    assert "x-api-key" not in got
    assert "x-custom-token" not in got
    assert "authorization" not in got
    # Trellis's own headers are no credential: the step's key still goes along.
    assert got["idempotency-key"]


async def test_coming_back_to_the_first_origin_does_not_bring_them_back(
    origins: Origins, make_call: MakeCall
) -> None:
    back = f"{origins.first}/headers"
    got = await seen(make_call, f"{origins.first}/redirect?to={origins.second}/redirect?to={back}")
    assert got["host"] == origins.first.removeprefix("http://")
    assert "x-api-key" not in got


async def test_a_redirect_within_the_origin_keeps_them(
    origins: Origins, make_call: MakeCall
) -> None:
    got = await seen(make_call, f"{origins.first}/redirect?to=/headers")
    assert got["x-api-key"] == "k-secret"
    assert got["x-custom-token"] == "t-secret"
    assert got["authorization"] == "B s"


async def test_headers_describing_the_request_itself_go_on(
    origins: Origins, make_call: MakeCall
) -> None:
    """Host (httpx sets it to the new origin) and Content-Type (of the body a 307 sends on)
    are no credentials: without them the redirected request would be malformed."""
    executor = BuiltinExecutor(LOOPBACK_ALLOWED)
    first_host = origins.first.removeprefix("http://")
    config = {
        "url": f"{origins.first}/redirect307?to={origins.second}/headers",
        "method": "POST",
        "json": {"a": 1},
        "headers": {"Host": first_host, "Content-Type": "application/vnd.t+json", **STEP_HEADERS},
    }
    try:
        outcome = await executor.execute(make_call("builtin:http", config))
    finally:
        await executor.close()
    got = outcome.output["body"]
    assert got["host"] == origins.second.removeprefix("http://")
    assert got["content-type"] == "application/vnd.t+json"
    assert "x-api-key" not in got
