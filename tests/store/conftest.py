"""The `store` fixture: every contract test runs on SQLite, and on MongoDB: the server
TRELLIS_TEST_MONGODB_URL names, or else a named FAKE MongoDB (tests/support/fake_mongo.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from activities.store.base import Store
from activities.store.mongo import MongoStore
from activities.store.sqlite import SqliteStore
from tests.support.fake_mongo import forget, is_fake, mongo_for_tests

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
    url, options = mongo_for_tests()
    database = f"trellis_test_{uuid4().hex[:12]}"
    yield lambda: MongoStore(url, database=database, **options)
    if is_fake(url):  # a FAKE MongoDB (mongomock), named as such: no server can run here
        forget(url)
        return
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
    try:
        await client.drop_database(database)
    finally:
        await client.close()


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[Store]:
    """A connected store on a fresh database, closed after the test."""
    opened = store_factory()
    await opened.connect()
    yield opened
    await opened.close()
