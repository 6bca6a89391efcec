"""Writes that race on MongoDB end as on SQLite, whose read and write share a transaction.

MongoDB has no such transaction here, so a write that reads first writes only over what it
read. The FAKE MongoDB (tests/support/fake_mongo.py) never yields inside a call, so each
test forces the interleaving: the other write runs, once, between this one's read and its
write.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from activities.store.mongo import MongoStore
from activities.store.records import A2ATaskRef
from tests.store.builders import at, new_id, run, workflow
from tests.support.fake_mongo import (
    FakeAsyncMongoClient,
    FakeCollection,
    forget,
    is_fake,
    mongo_for_tests,
)


@pytest.fixture
async def mongo() -> AsyncIterator[MongoStore]:
    url, options = mongo_for_tests()
    if not is_fake(url):
        pytest.skip("forces an interleaving inside the fake's calls: only on the fake")
    store = MongoStore(url, database="races", **options)
    await store.connect()
    yield store
    await store.close()
    forget(url)


def _once_before(
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    collection: str,
    other: Callable[[], Awaitable[Any]],
    after: bool = False,
) -> list[bool]:
    """Run `other` once, at the first call of `collection`'s `method` (after it with
    `after`, else before it); the list holding True once it ran."""
    original = getattr(FakeCollection, method)
    ran: list[bool] = []

    async def interleaved(self: FakeCollection, *args: Any, **kwargs: Any) -> Any:
        if ran or self._sync.name != collection:
            return await original(self, *args, **kwargs)
        ran.append(True)
        if not after:
            await other()
            return await original(self, *args, **kwargs)
        result = await original(self, *args, **kwargs)
        await other()
        return result

    monkeypatch.setattr(FakeCollection, method, interleaved)
    return ran


def _node_run(run_id: str, node_run_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": node_run_id,
        "workflow_run_id": run_id,
        "node_id": "step-1",
        "node_name": "Validate",
        **fields,
    }


async def test_a_cancel_merged_while_the_steps_start_lands_keeps_the_start(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = run(new_id())
    await mongo.insert_run(record)
    node_run_id = f"{record.id}.step-1.1"
    assert await mongo.merge_node_run(_node_run(record.id, node_run_id, status="pending", rev=10))
    start = _node_run(
        record.id,
        node_run_id,
        status="running",
        rev=20,
        attempt=1,
        started_at=at(0.05),
        input_snapshot={"to": "ada"},
    )
    cancel = _node_run(record.id, node_run_id, status="cancelled", rev=30, error="cancelled")
    started: list[bool] = []

    async def the_start() -> None:
        started.append(await mongo.merge_node_run(start))

    ran = _once_before(monkeypatch, "find_one", "node_runs", the_start, after=True)
    assert await mongo.merge_node_run(cancel)

    assert ran and started == [True]
    stored = await mongo.get_node_run(node_run_id)
    assert stored is not None
    # As on SQLite: the cancel over the start, which stays.
    assert (stored.status, stored.rev, stored.attempt) == ("cancelled", 30, 1)
    assert (stored.started_at, stored.input_snapshot) == (at(0.05), {"to": "ada"})


async def test_a_start_merged_while_the_first_write_lands_keeps_what_it_wrote(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = run(new_id())
    await mongo.insert_run(record)
    node_run_id = f"{record.id}.step-1.1"
    first = _node_run(record.id, node_run_id, status="pending", rev=10, input_snapshot=[1])
    start = _node_run(
        record.id, node_run_id, status="running", rev=20, attempt=1, started_at=at(0.05)
    )

    async def the_first() -> None:
        assert await mongo.merge_node_run(first)

    # The start reads no node run; the first write makes it before the start writes.
    _once_before(monkeypatch, "find_one", "node_runs", the_first, after=True)
    assert await mongo.merge_node_run(start)

    stored = await mongo.get_node_run(node_run_id)
    assert stored is not None
    # As on SQLite: the start merged over the first write, whose input stays.
    assert (stored.status, stored.rev, stored.attempt) == ("running", 20, 1)
    assert stored.input_snapshot == [1]


async def test_a2a_releases_racing_keep_the_first_failure_that_landed(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = A2ATaskRef(new_id(), new_id(), "slow-agent", new_id())
    await mongo.record_a2a_task(task, at(0))

    async def the_other() -> None:
        await mongo.release_a2a_task(task, at(2))

    # The other release lands before this one's write (after its read, where it reads).
    _once_before(monkeypatch, "update_one", "a2a_tasks", the_other)
    await mongo.release_a2a_task(task, at(1))

    # As SQLite's COALESCE: the first failure that landed stays.
    lease = timedelta(seconds=50)
    [claimed] = await mongo.claim_abandoned_a2a_tasks(at(10), lease, 10, followed_before=at(10))
    assert claimed.first_failed_at == at(2)


async def test_an_a2a_task_its_step_follows_between_a_sweeps_read_and_claim_is_left(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its run is not stored (deleted): abandoned, were it not followed.
    task = A2ATaskRef(new_id(), new_id(), "slow-agent", new_id())
    await mongo.record_a2a_task(task, at(0))

    async def the_step() -> None:
        await mongo.follow_a2a_task(task, at(9))

    # The step's follow lands after the sweep read the note, before it claims it.
    ran = _once_before(monkeypatch, "update_one", "a2a_tasks", the_step)
    lease = timedelta(seconds=50)
    assert await mongo.claim_abandoned_a2a_tasks(at(10), lease, 10, followed_before=at(5)) == []
    assert ran == [True]


async def test_a_run_read_while_its_large_output_is_replaced_reads_the_new_one(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = workflow()
    await mongo.create_workflow(wf)
    record = run(wf.id, initial_input={"text": "i" * 9_000_000})
    await mongo.insert_run(record)
    assert await mongo.update_run(record.id, 5, {"final_output": {"text": "o" * 9_000_000}})
    new = {"text": "n" * 9_000_000}

    async def the_write() -> None:
        assert await mongo.update_run(record.id, 6, {"final_output": new})

    # The write lands after the read found the run, before its output's chunks are read
    # (then gone): the run is read again.
    _once_before(monkeypatch, "find_one", "runs", the_write, after=True)
    stored = await mongo.get_run(record.id)

    assert stored is not None and stored.final_output == new


async def test_a_workflow_saved_while_another_store_folds_it_keeps_its_new_fold(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = workflow("Old name")
    await mongo.create_workflow(record)
    # As a store before folding wrote it: no folded fields.
    await mongo._db().workflows.update_one(
        {"_id": record.id},
        {"$unset": {"name_fold": "", "description_fold": "", "search_fold_version": ""}},
    )
    renamed = record.model_copy(update={"name": "İstanbul", "version": 2})

    async def the_save() -> None:
        await mongo.update_workflow(renamed, new_version=True)

    # Another API connecting folds what it read; the save lands before that write.
    _once_before(monkeypatch, "update_one", "workflows", the_save)
    other = MongoStore(mongo.url, mongo.database_name, client_class=FakeAsyncMongoClient)
    await other.connect()
    await other.close()

    items, _ = await mongo.list_workflows("istanbul", 1, 10)
    assert [r.id for r in items] == [record.id]
