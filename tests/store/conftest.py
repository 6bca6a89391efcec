"""The `store` fixture: every contract test runs on SQLite, and on MongoDB when one is given."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from activities.store.base import Store
from activities.store.mongo import MongoStore
from activities.store.sqlite import SqliteStore
from tests.support.fake_mongo import FakeAsyncMongoClient, forget

# Without a server the MongoDB store runs on a named fake (tests/support/fake_mongo.py):
# mongomock behind PyMongo's async API. What only a server can show skips on it, saying so.
MONGO_FAKE_SKIP = (
    "needs a real MongoDB server (TRELLIS_TEST_MONGODB_URL; none can be installed on this "
    "machine, and the fake MongoDB cannot show this)"
)

StoreFactory = Callable[[], Store]


@pytest.fixture(params=["sqlite", "mongodb"])
async def store_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StoreFactory]:
    """Makes unconnected stores that all open the same fresh database."""
    if request.param == "sqlite":
        path = tmp_path / "data" / "trellis.db"
        yield lambda: SqliteStore(path)
        return
    url = os.environ.get("TRELLIS_TEST_MONGODB_URL")
    database = f"trellis_test_{uuid4().hex[:12]}"
    if not url:
        # A FAKE MongoDB (mongomock), named as such: no server can run here.
        fake_url = f"mongodb://fake-mongodb-{uuid4().hex[:8]}/"
        yield lambda: MongoStore(fake_url, database=database, client_class=FakeAsyncMongoClient)
        forget(fake_url)
        return
    yield lambda: MongoStore(url, database=database)
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
    try:
        await client.drop_database(database)
    finally:
        await client.close()


def on_fake_mongodb(store: Store) -> bool:
    """Whether this store is the MongoDB store on the fake (no server given)."""
    return isinstance(store, MongoStore) and store.url.startswith("mongodb://fake-mongodb-")


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[Store]:
    """A connected store on a fresh database, closed after the test."""
    opened = store_factory()
    await opened.connect()
    yield opened
    await opened.close()
