"""The live event stream of a run (SSE): order, ids, resumption, keep-alive, closing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import jsonschema
import pytest

from app.main import create_app
from app.routes import events as events_route
from app.settings import Settings
from tests.api.helpers import assert_error
from tests.events.sse import Message, messages, read_all
from tests.support.platform import Platform
from tests.support.server import serving

SLOW = {
    "nodes": [
        {
            "id": "wait",
            "name": "wait",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"seconds": 0.6},
        },
        {"id": "after", "name": "after", "nodeType": "step", "executorKey": "builtin:echo"},
    ]
}


def events_url(workflow_id: str, run_id: str) -> str:
    return f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events"


def data_only(stream: list[Message]) -> list[Message]:
    return [m for m in stream if m.data]


class TestStream:
    async def test_event_times_never_go_back_and_the_end_is_not_dated_before_its_steps(
        self, platform: Platform
    ) -> None:
        # A run of inline steps ends in the task of its last step: its end was dated at the
        # task's start, before the steps' own times (stamped after it, in causal order).
        steps = [
            {"id": f"s{i}", "name": f"s{i}", "nodeType": "step", "executorKey": "builtin:echo"}
            for i in range(3)
        ]
        wf = await platform.create({"nodes": [*SLOW["nodes"], *steps]})
        run_id = await platform.trigger(wf)
        stream = data_only(await read_all(platform.api, events_url(wf, run_id)))
        times = [m.json()["timestamp"] for m in stream]
        assert stream[-1].event == "run_completed"
        assert times == sorted(times), list(zip([m.event for m in stream], times, strict=True))
        run = await platform.wait(wf, run_id)
        assert times[-1] >= max(n["finishedAt"] for n in run["nodeRuns"])

    async def test_a_step_that_fails_or_is_skipped_in_the_workflow_shows_its_start(
        self, platform: Platform
    ) -> None:
        # A template or an inline built-in fails before any activity: its node run has a
        # startedAt, so the stream must show the node_started a remote step would show.
        failing = {"nodeType": "step", "executorKey": "builtin:transform"}
        wf = await platform.create(
            {
                "nodes": [
                    {
                        **failing,
                        "id": "skip",
                        "name": "skip",
                        "config": {"map": {"v": "input.missing"}},
                        "stepConfig": {"onError": "skip"},
                    },
                    {**failing, "id": "fail", "name": "fail", "config": {"map": "{{ input.x }}"}},
                ]
            }
        )
        run_id = await platform.trigger(wf)
        stream = data_only(await read_all(platform.api, events_url(wf, run_id)))
        assert [(m.event, m.json().get("nodeId")) for m in stream] == [
            ("run_started", None),
            ("node_started", "skip"),
            ("node_skipped", "skip"),
            ("node_started", "fail"),
            ("node_failed", "fail"),
            ("run_failed", None),
        ]
        # A step's node events say its attempt (they said none: found by an outside audit).
        assert [m.json().get("attempt") for m in stream] == [None, 1, 1, 1, 1, None]
        run = await platform.wait(wf, run_id)
        started = {n["nodeId"]: n["startedAt"] for n in run["nodeRuns"]}
        assert started["skip"] is not None and started["fail"] is not None

    async def test_a_run_streams_in_order_and_the_stream_ends_after_the_terminal_event(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        stream = data_only(await read_all(platform.api, events_url(wf, run_id)))
        kinds = [m.event for m in stream]
        assert kinds == [
            "run_started",
            "node_started",
            "node_completed",
            "node_started",
            "node_completed",
            "run_completed",
        ]
        # A step's node events say its attempt: an inline one's (builtin:echo) as a remote
        # one's (builtin:delay); the inline ones said none (found by an outside audit).
        assert [m.json().get("attempt") for m in stream] == [None, 1, 1, 1, 1, None]
        ids = [int(m.id or 0) for m in stream]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        first = stream[0].json()
        assert first["type"] == "run_started" and first["runId"] == run_id
        assert first["id"] == ids[0] and "timestamp" in first
        assert stream[1].json()["nodeRunId"] == f"{run_id}.wait.1"

    async def test_events_reach_the_client_within_a_second(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        seen: dict[str, float] = {}
        async with platform.api.stream("GET", events_url(wf, run_id)) as response:
            async for message in messages(response):
                if message.event:
                    seen[message.event] = time.monotonic()
        # The delay step sleeps 0.6 s: its completion must not lag far behind.
        assert seen["run_completed"] - seen["node_started"] < 0.6 + 1.0

    async def test_last_event_id_resumes_after_that_event(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.wait(wf, await platform.trigger(wf))
        full = data_only(await read_all(platform.api, events_url(wf, run_id["id"])))
        resumed = data_only(
            await read_all(
                platform.api,
                events_url(wf, run_id["id"]),
                headers={"Last-Event-ID": str(full[1].id)},
            )
        )
        assert [m.id for m in resumed] == [m.id for m in full[2:]]

    async def test_the_last_event_id_query_parameter_resumes_too(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run = await platform.wait(wf, await platform.trigger(wf))
        full = data_only(await read_all(platform.api, events_url(wf, run["id"])))
        url = f"{events_url(wf, run['id'])}?lastEventId={full[-2].id}"
        assert [m.event for m in data_only(await read_all(platform.api, url))] == ["run_completed"]

    async def test_a_finished_run_whose_events_were_all_sent_closes_promptly(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(SLOW)
        run = await platform.wait(wf, await platform.trigger(wf))
        full = data_only(await read_all(platform.api, events_url(wf, run["id"])))
        started = time.monotonic()
        tail = await read_all(
            platform.api, events_url(wf, run["id"]), headers={"Last-Event-ID": str(full[-1].id)}
        )
        assert data_only(tail) == []
        assert time.monotonic() - started < 1.5

    async def test_idle_streams_get_keep_alive_comments(
        self, platform: Platform, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(events_route, "KEEP_ALIVE_SECONDS", 0.2)
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        stream = await read_all(platform.api, events_url(wf, run_id))
        assert any(c.startswith("ping") for m in stream for c in m.comments)

    async def test_a_malformed_last_event_id_is_400(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        response = await platform.api.get(events_url(wf, run_id), headers={"Last-Event-ID": "abc"})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        # A malformed query is refused too when a good header comes with it (it was ignored).
        response = await platform.api.get(
            events_url(wf, run_id) + "?lastEventId=x1", headers={"Last-Event-ID": "3"}
        )
        assert response.status_code == 400
        assert "Invalid lastEventId 'x1'" in response.json()["error"]["message"]

    async def test_a_negative_or_too_long_last_event_id_is_400_saying_what_is_accepted(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        # A full-width digit is no digit here; quoted as sent (it read 'ï¼\x95').
        for given in ("-1", "1" * 19, "+3", "\uff15"):
            response = await platform.api.get(
                events_url(wf, run_id), headers={"Last-Event-ID": given.encode()}
            )
            assert_error(response, 400, "invalid_request", f"Invalid Last-Event-ID {given!r}")
            assert "a non-negative integer of at most 18 digits" in response.text

    async def test_an_unknown_run_is_404(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        response = await platform.api.get(events_url(wf, "run-nope"))
        assert response.status_code == 404


async def test_another_api_replica_streams_a_run_it_did_not_start(
    platform: Platform, tmp_path: Any
) -> None:
    """A second API process-equivalent: its own app and store connection on the same data."""
    from activities.store.factory import open_store

    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    settings = Settings(data_dir=tmp_path, task_queue=platform.task_queue)
    try:
        app = create_app(settings, store=store, temporal=platform.client)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as replica:
            wf = await platform.create(SLOW)
            run_id = await platform.trigger(wf)
            reading = asyncio.create_task(read_all(replica, events_url(wf, run_id)))
            stream = data_only(await asyncio.wait_for(reading, 10))
        kinds = [m.event for m in stream]
        assert kinds[0] == "run_started" and kinds[-1] == "run_completed"
    finally:
        await store.close()


async def test_the_stream_is_served_as_the_openapi_document_says(platform: Platform) -> None:
    # The document named no content type for the stream's 200 (sse-starlette sets its
    # media type per response), so clients and Schemathesis could not check it.
    wf = await platform.create({"nodes": SLOW["nodes"][1:]})
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id)
    doc = (await platform.api.get("/openapi.json")).json()
    path = "/api/v1/workflows/{workflow_id}/runs/{run_id}/events"
    documented = doc["paths"][path]["get"]["responses"]["200"].get("content", {})
    response = await platform.api.get(events_url(wf, run_id))
    assert response.status_code == 200
    served = response.headers["content-type"].split(";")[0]
    assert served == "text/event-stream"
    assert list(documented) == [served]
    # Each event as documented (Schemathesis checks every event against it).
    event = documented[served]["itemSchema"]
    stream = data_only(await read_all(platform.api, events_url(wf, run_id)))
    assert stream
    for message in stream:
        fields = {"data": "\n".join(message.data), "event": message.event, "id": message.id}
        jsonschema.validate(fields, event)
        assert message.json()["type"] == message.event
