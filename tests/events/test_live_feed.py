"""Live streams are woken by the store's feed, not by polling, across connections."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pytest

from activities.store.factory import open_store
from activities.store.mongo import MongoStore
from app.main import create_app
from app.routes import events as events_route
from app.services import event_hub, event_stream
from app.services.event_hub import EventHub
from app.settings import Settings
from tests.events.sse import read_all
from tests.events.test_event_stream import SLOW, data_only, events_url
from tests.support.fake_mongo import FakeAsyncMongoClient, forget
from tests.support.platform import Platform
from tests.support.server import serving


async def test_a_replica_streams_events_another_process_wrote_without_polling(
    platform: Platform, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Polling so slow that only the feed's doorbell can deliver the run within the wait.
    monkeypatch.setattr(events_route, "POLL_SECONDS", 30.0)
    monkeypatch.setattr(event_stream, "IDLE_SECONDS", 30.0)
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    settings = Settings(data_dir=tmp_path, task_queue=platform.task_queue)
    try:
        app = create_app(settings, store=store, temporal=platform.client)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=20) as replica:
            wf = await platform.create(SLOW)
            run_id = await platform.trigger(wf)
            reading = asyncio.create_task(read_all(replica, events_url(wf, run_id)))
            stream = data_only(await asyncio.wait_for(reading, 10))
        assert [m.event for m in stream] == [
            "run_started",
            "node_started",
            "node_completed",
            "node_started",
            "node_completed",
            "run_completed",
        ]
    finally:
        await store.close()


async def test_without_a_feed_streams_fall_back_to_polling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_hub, "READY_SECONDS", 0.2)
    # Never connected: following it fails at once, as a standalone MongoDB's change stream does.
    hub = EventHub(MongoStore("mongodb://127.0.0.1:9/"), retry_seconds=30.0)
    async with hub.subscribe("run-1") as wakeup:
        assert not wakeup.live.is_set()
        started = time.monotonic()
        await wakeup.wait(poll_seconds=0.05, idle_seconds=30.0)
        assert time.monotonic() - started < 5.0
    await hub.close()


async def test_a_stream_does_not_wait_for_a_feed_that_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A standalone MongoDB refuses change streams at once (the named fake does the same):
    # the stream reads at once and polls, instead of waiting out READY_SECONDS first.
    monkeypatch.setattr(event_hub, "READY_SECONDS", 30.0)
    url = f"mongodb://fake-mongodb-{uuid.uuid4().hex[:8]}/"
    store = MongoStore(url, client_class=FakeAsyncMongoClient)
    await store.connect()
    hub = EventHub(store, retry_seconds=30.0)
    try:
        started = time.monotonic()
        async with asyncio.timeout(5):
            async with hub.subscribe("run-1") as wakeup:
                assert not wakeup.live.is_set()
        assert time.monotonic() - started < 5.0
        # A second stream while the feed waits to retry does not wait either.
        async with asyncio.timeout(5), hub.subscribe("run-2") as wakeup:
            assert not wakeup.live.is_set()
    finally:
        await hub.close()
        await store.close()
        forget(store.url)


async def test_the_hub_stops_following_the_store_when_the_last_stream_closes(
    tmp_path: Path,
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    hub = EventHub(store)
    try:
        async with hub.subscribe("run-1") as wakeup:
            assert wakeup.live.is_set()
            await store.append_event("run-1", {"type": "run_started"})
            await asyncio.wait_for(wakeup.ring.wait(), 5)
        assert not wakeup.live.is_set()
    finally:
        await hub.close()
        await store.close()
