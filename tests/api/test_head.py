"""HEAD on a GET route: the GET's status and headers, no body, and nothing more done."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from activities.store.base import Store
from tests.api.helpers import API
from tests.builders import echo, workflow


async def test_head_answers_like_get_without_a_body(
    client: httpx.AsyncClient, create: Callable[..., Any]
) -> None:
    created = await create(workflow("head", echo("a")))
    for path in (f"{API}/workflows", f"{API}/workflows/{created['id']}", "/healthz"):
        got, head = await client.get(path), await client.head(path)
        assert head.status_code == got.status_code == 200
        assert head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"]
        assert head.headers["content-length"] == got.headers["content-length"]


async def test_head_of_an_unknown_or_malformed_id_is_the_gets_status(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.head(f"{API}/workflows/unknown-id")).status_code == 404
    assert (await client.head(f"{API}/workflows/!x")).status_code == 400


async def test_head_on_a_path_without_get_is_405_allowing_head_where_get_is(
    client: httpx.AsyncClient,
) -> None:
    response = await client.head(f"{API}/workflows/some-id/toggle")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    post = await client.post(f"{API}/workflows/some-id")
    assert post.headers["allow"] == "DELETE, GET, HEAD, PUT"


async def test_head_on_a_run_event_stream_ends_without_events(
    client: httpx.AsyncClient, create: Callable[..., Any], store: Store
) -> None:
    workflow_id = (await create(workflow("head-events", echo("a"))))["id"]
    await client.post(f"{API}/workflows/{workflow_id}/toggle", json={"enabled": True})
    # No worker: the run stays open, so its GET stream would not end by itself.
    run_id = (await client.post(f"{API}/workflows/{workflow_id}/runs", json={})).json()["runId"]
    before = await store.get_run(run_id)
    response = await asyncio.wait_for(
        client.head(f"{API}/workflows/{workflow_id}/runs/{run_id}/events"), timeout=10
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == b""
    assert await store.get_run(run_id) == before
