"""Built-in executors: echo, transform, http, delay."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from activities.executors.base import PermanentError, TransientError
from activities.executors.registry import ExecutorRegistry
from temporal_workflows.clock import fixed_width
from tests.executors.conftest import MakeCall
from tests.peers.serving import ServedApp


@pytest.fixture(scope="module")
def http_peer() -> Iterator[str]:
    app = FastAPI()

    @app.post("/status/{code}")
    async def status(code: int, body: dict[str, object]) -> JSONResponse:
        return JSONResponse({"got": body}, status_code=code)

    @app.get("/headers")
    async def echo_headers(request: Request) -> dict[str, str]:
        return dict(request.headers)

    served = ServedApp(app).start()
    yield served.base_url
    served.stop()


async def test_echo_returns_config_and_input(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(make_call("builtin:echo", {"a": [1, 2]}))
    assert outcome.output == {"config": {"a": [1, 2]}, "input": {"customerName": "Ada"}}
    assert outcome.resolved_executor == {"kind": "builtin", "key": "builtin:echo"}


async def test_transform_maps_cel_expressions(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    config = {"map": {"greeting": "'Hi ' + input.customerName", "n": "1 + 2"}}
    outcome = await registry.execute(make_call("builtin:transform", config))
    assert outcome.output == {"greeting": "Hi Ada", "n": 3}


async def test_transform_with_a_failing_expression_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="CEL"):
        await registry.execute(make_call("builtin:transform", {"map": {"x": "input.missing.deep"}}))


async def test_http_returns_status_and_json_body(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: str
) -> None:
    config = {"method": "POST", "url": f"{http_peer}/status/201", "json": {"a": 1}}
    outcome = await registry.execute(make_call("builtin:http", config))
    assert outcome.output["status"] == 201 and outcome.output["body"] == {"got": {"a": 1}}


async def test_http_4xx_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: str
) -> None:
    config = {"method": "POST", "url": f"{http_peer}/status/404", "json": {}}
    with pytest.raises(PermanentError, match="404"):
        await registry.execute(make_call("builtin:http", config))


async def test_http_5xx_is_retryable(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: str
) -> None:
    config = {"method": "POST", "url": f"{http_peer}/status/503", "json": {"n": 1}}
    with pytest.raises(TransientError, match="503") as failed:
        await registry.execute(make_call("builtin:http", config))
    # The answer's JSON quoted as JSON, not as a Python dict (found by an audit).
    assert str(failed.value).endswith('returned 503: {"got": {"n": 1}}'), str(failed.value)


async def test_http_connection_failure_is_retryable(
    registry: ExecutorRegistry, make_call: MakeCall, peers: object
) -> None:
    from tests.peers.serving import free_port

    config = {"url": f"http://127.0.0.1:{free_port()}/", "timeout": 2}
    with pytest.raises(TransientError):
        await registry.execute(make_call("builtin:http", config))


async def test_http_with_a_zero_timeout_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: str
) -> None:
    # A zero timeout times every attempt out before it connects: a config error, not a
    # failure worth retrying.
    config = {"method": "POST", "url": f"{http_peer}/status/200", "json": {}, "timeout": 0}
    with pytest.raises(PermanentError, match=r"config\.timeout must be a positive number"):
        await registry.execute(make_call("builtin:http", config))


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"X-Token": "\u2026"}, "value must be ASCII text"),
        ({"X-Token": "s3cret\r\nX-Evil: 1"}, "value must be ASCII text"),
        # h11 refuses a value with a space at either end (an empty template: "Bearer ").
        ({"Authorization": "Bearer "}, "not begin or end with a space"),
        ({"X-Key": " s3cret-4"}, "not begin or end with a space"),
        ({"X-Key": "s3cret-5\t"}, "not begin or end with a space"),
        ({"X Token": "s3cret-1"}, "not a valid header name"),
        ({"": "s3cret-2"}, "not a valid header name"),
        ({"X-\u00d6": "s3cret-3"}, "not a valid header name"),
    ],
)
async def test_http_with_a_header_it_cannot_send_is_permanent(
    registry: ExecutorRegistry,
    make_call: MakeCall,
    http_peer: str,
    headers: dict[str, str],
    reason: str,
) -> None:
    # Every attempt would fail alike (an encoding error, a protocol error): a config
    # error, named, with the header's value (maybe a secret) not quoted.
    config = {"method": "POST", "url": f"{http_peer}/status/200", "json": {}, "headers": headers}
    with pytest.raises(PermanentError, match=reason) as raised:
        await registry.execute(make_call("builtin:http", config))
    assert "config.headers" in str(raised.value)
    assert all(v not in str(raised.value) for v in headers.values() if v)


async def test_http_sends_plain_header_values_as_given(
    registry: ExecutorRegistry, make_call: MakeCall, http_peer: str
) -> None:
    headers = {"X-Token": "abc 1\t2", "X-N": 7, "X-Empty": ""}
    config = {"url": f"{http_peer}/headers", "headers": headers}
    outcome = await registry.execute(make_call("builtin:http", config))
    assert outcome.output["body"]["x-token"] == "abc 1\t2"
    assert outcome.output["body"]["x-n"] == "7"
    assert outcome.output["body"]["x-empty"] == ""


async def test_delay_sleeps_and_heartbeats(registry: ExecutorRegistry, make_call: MakeCall) -> None:
    beats: list[object] = []
    call = make_call("builtin:delay", {"seconds": 0.3}, heartbeat=lambda *d: beats.append(d))
    outcome = await registry.execute(call)
    assert outcome.output == {"sleptSeconds": 0.3} and beats


async def test_a_delay_after_its_attempt_was_lost_sleeps_only_what_is_left(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    # An attempt cut off by a deploy or its timeout slept the whole delay again.
    beats: list[tuple[object, ...]] = []
    first = make_call("builtin:delay", {"seconds": 60}, heartbeat=lambda *d: beats.append(d))
    task = asyncio.create_task(registry.execute(first))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [progress] = beats[-1]
    assert isinstance(progress, dict)
    until = datetime.fromisoformat(progress["until"])
    assert 59 < (until - datetime.now(UTC)).total_seconds() < 60
    # Its next attempt, with what the last heartbeat said, and an attempt whose moment passed.
    soon = fixed_width(datetime.now(UTC) + timedelta(seconds=0.3))
    passed = fixed_width(datetime.now(UTC) - timedelta(seconds=5))
    # It sleeps until the moment it was given (its heartbeats name it), or not at all once
    # it passed: what it decided, not the wall time it took (a stall failed a 0.2 s bound).
    for earlier, named in (({"until": soon}, [soon]), ({"until": passed}, [])):
        again_beats: list[tuple[object, ...]] = []
        again = make_call(
            "builtin:delay",
            {"seconds": 60},
            earlier_progress=earlier,
            heartbeat=lambda *d, to=again_beats: to.append(d),
        )
        assert (await asyncio.wait_for(registry.execute(again), 10)).output == {"sleptSeconds": 60}
        assert sorted({b[0]["until"] for b in again_beats}) == named  # type: ignore[index]
    # A moment beyond the delay's own length is not believed (the config changed).
    later = fixed_width(datetime.now(UTC) + timedelta(hours=1))
    short = make_call("builtin:delay", {"seconds": 0.2}, earlier_progress={"until": later})
    await asyncio.wait_for(registry.execute(short), 2)


@pytest.mark.parametrize(
    ("earlier", "left"),
    [
        ({"remainingSeconds": 0.3}, 0.3),
        ({"remainingSeconds": 0}, 0.0),
        ({"remainingSeconds": 3600}, 1.5),  # never beyond the delay's own length
        ({"remainingSeconds": -1}, 1.5),  # not believed: the whole delay
        ({"remainingSeconds": "soon", "until": "no time"}, 1.5),
    ],
)
async def test_a_delay_whose_attempt_an_older_release_heartbeat_sleeps_what_was_left(
    registry: ExecutorRegistry,
    make_call: MakeCall,
    earlier: dict[str, object],
    left: float,
) -> None:
    """Releases before the `until` heartbeat sent only `remainingSeconds`: an attempt a
    deploy from one of them cut off slept its whole delay again after the deploy."""
    # What it decided to sleep is the moment its heartbeats name, not the wall time it
    # took (a stall of the test process failed a 0.2 s bound).
    beats: list[tuple[object, ...]] = []
    asked = datetime.now(UTC)
    again = make_call(
        "builtin:delay",
        {"seconds": 1.5},
        earlier_progress=earlier,
        heartbeat=lambda *d: beats.append(d),
    )
    assert (await asyncio.wait_for(registry.execute(again), 10)).output == {"sleptSeconds": 1.5}
    if not left:
        assert beats == []  # nothing left to sleep
        return
    [progress] = beats[0]
    assert isinstance(progress, dict)
    until = (datetime.fromisoformat(progress["until"]) - asked).total_seconds()
    assert left - 0.05 <= until < left + 1.0, until  # a stall before it decides adds on


async def test_delay_stops_promptly_when_cancelled(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    task = asyncio.create_task(registry.execute(make_call("builtin:delay", {"seconds": 30})))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 0.5


async def test_unknown_builtin_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="builtin:nope"):
        await registry.execute(make_call("builtin:nope"))
