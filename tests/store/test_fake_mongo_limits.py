"""The FAKE MongoDB (tests/support/fake_mongo.py) refuses a document past 16 MiB on every
write path, as a server does: an insert or replacement before it is sent, an update whose
resulting document would pass it with code 17419, the document left as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import ReturnDocument
from pymongo.errors import DocumentTooLarge, OperationFailure, WriteError

from tests.support.fake_mongo import (
    MAX_BSON_BYTES,
    FakeAsyncMongoClient,
    FakeCollection,
    forget,
    mongo_for_tests,
)

HALF = "x" * (MAX_BSON_BYTES // 2 + 1)


@pytest.fixture
async def docs() -> AsyncIterator[FakeCollection]:
    url, _ = mongo_for_tests()
    if "fake-mongodb" not in url:
        pytest.skip("tests the fake itself")
    client = FakeAsyncMongoClient(url)
    yield client["limits"]["docs"]
    await client.close()
    forget(url)


async def test_an_insert_or_replacement_past_the_limit_is_refused(docs: FakeCollection) -> None:
    with pytest.raises(DocumentTooLarge):
        await docs.insert_one({"_id": "a", "a": HALF, "b": HALF})
    await docs.insert_one({"_id": "a", "a": HALF})
    with pytest.raises(DocumentTooLarge):
        await docs.replace_one({"_id": "a"}, {"a": HALF, "b": HALF}, upsert=True)
    assert await _fields("a", docs) == {"_id", "a"}


@pytest.mark.parametrize("upsert", [False, True])
async def test_an_update_whose_result_passes_the_limit_is_refused_and_changes_nothing(
    docs: FakeCollection, upsert: bool
) -> None:
    await docs.insert_one({"_id": "a", "a": HALF, "n": 1})
    grow = {"$set": {"b": HALF}, "$inc": {"n": 1}}

    with pytest.raises(WriteError) as refused:
        await docs.update_one({"_id": "a"}, grow, upsert=upsert)
    assert refused.value.code == 17419
    with pytest.raises(WriteError):
        await docs.update_many({"n": 1}, grow)
    with pytest.raises(OperationFailure) as again:
        await docs.find_one_and_update(
            {"_id": "a"}, grow, upsert=upsert, return_document=ReturnDocument.AFTER
        )
    assert again.value.code == 17419

    stored = await docs.find_one({"_id": "a"})
    assert stored is not None and (set(stored), stored["n"]) == ({"_id", "a", "n"}, 1)


async def test_an_upsert_that_would_make_a_document_past_the_limit_makes_none(
    docs: FakeCollection,
) -> None:
    # The update is within the limit; the document made (the filter's fields too) is not.
    made = {"_id": "new", "f": HALF}
    with pytest.raises(WriteError):
        await docs.update_one(made, {"$set": {"a": HALF}}, upsert=True)
    with pytest.raises(OperationFailure):
        await docs.find_one_and_update(made, {"$set": {"a": HALF}}, upsert=True)
    assert await docs.find_one({"_id": "new"}) is None


async def _fields(key: str, docs: FakeCollection) -> set[str]:
    found: dict[str, Any] | None = await docs.find_one({"_id": key})
    return set() if found is None else set(found)
