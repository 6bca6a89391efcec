"""MongoDB keeps each workflow's folded search text beside it; workflows saved before it did
get theirs when the store connects (on the FAKE MongoDB unless TRELLIS_TEST_MONGODB_URL)."""

from __future__ import annotations

import pytest

from activities.store.mongo import MongoStore
from tests.store.builders import workflow
from tests.support.fake_mongo import forget, is_fake, mongo_for_tests


async def test_a_workflow_saved_before_search_folding_is_found_after_connect() -> None:
    url, options = mongo_for_tests()
    if not is_fake(url):
        pytest.skip("writes a legacy document into a database of its own: only on the fake")
    record = workflow("İstanbul")
    first = MongoStore(url, database="fold", **options)
    await first.connect()
    await first.create_workflow(record)
    # As a store before folding wrote it: no folded fields.
    await first._db().workflows.update_one(
        {"_id": record.id},
        {"$unset": {"name_fold": "", "description_fold": "", "search_fold_version": ""}},
    )
    assert (await first.list_workflows("istanbul", 1, 10))[1] == 0
    await first.close()
    again = MongoStore(url, database="fold", **options)
    await again.connect()
    try:
        items, _ = await again.list_workflows("istanbul", 1, 10)
        assert [r.id for r in items] == [record.id]
    finally:
        await again.close()
        forget(url)
