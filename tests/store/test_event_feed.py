"""The store's feed of written events (the doorbell of live streams), on every store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from activities.store.base import StoreError
from activities.store.mongo import event_run_id
from tests.store.conftest import StoreFactory

WAIT = 10.0


async def _next(feed: AsyncIterator[set[str]]) -> set[str]:
    try:
        return await asyncio.wait_for(anext(feed), WAIT)
    except StoreError as exc:
        if "replica set" in str(exc).lower() or "$changeStream" in str(exc):
            pytest.skip("MongoDB change streams need a replica set; this server is standalone")
        raise


async def test_the_feed_names_each_run_that_another_connection_writes_events_for(
    store_factory: StoreFactory,
) -> None:
    reader, writer = store_factory(), store_factory()
    await reader.connect()
    await writer.connect()
    feed = reader.watch_event_runs()
    try:
        assert await _next(feed) == set()  # listening
        await writer.append_event("run-a", {"type": "run_started"})
        seen = await _next(feed)
        await writer.append_event("run-b", {"type": "run_started"})
        while "run-b" not in seen:
            seen |= await _next(feed)
        assert seen == {"run-a", "run-b"}
    finally:
        await feed.aclose()  # type: ignore[attr-defined]
        await reader.close()
        await writer.close()


async def test_the_feed_starts_after_what_was_already_written(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    await store.connect()
    await store.append_event("old-run", {"type": "run_started"})
    feed = store.watch_event_runs()
    try:
        assert await _next(feed) == set()
        await store.append_event("new-run", {"type": "run_started"})
        assert await _next(feed) == {"new-run"}
    finally:
        await feed.aclose()  # type: ignore[attr-defined]
        await store.close()


def test_a_change_stream_insert_names_its_run() -> None:
    change = {
        "_id": {"_data": "8263A1"},
        "operationType": "insert",
        "fullDocument": {"run_id": "run-1"},
    }
    assert event_run_id(change) == "run-1"
    assert event_run_id({"_id": {}, "operationType": "insert"}) is None
