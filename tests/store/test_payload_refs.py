"""Large payloads go with the last run referring to them (`put_payload`'s `run_id`), on
SQLite and on MongoDB (the named fake here): under run retention, with their workflow, with
an unstarted run; one put for no run keeps a payload for good, and a put of the same bytes
racing the delete of the last other run leaves it present. A schedule's firing's own go once
old (`delete_firing_payloads`), a schedule's own argument once the schedule is deleted."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import ReturnDocument

from activities.run_start import new_run_id
from activities.store.base import PayloadHolder, Store
from activities.store.firing_ids import FIRING_ID
from activities.store.mongo import MongoStore
from activities.store.records import FiringRefsDeleted, RunRecord
from activities.store.sqlite import SqliteStore
from temporal_workflows.read_model import RECORDED_REV, START_FAILED_REV
from tests.store.builders import at, run, workflow
from tests.store.conftest import StoreFactory
from tests.support.fake_mongo import FakeCollection, forget, is_fake, mongo_for_tests

BIG = b"\x01" * 300_000


async def _ended(store: Store, wf: str) -> RunRecord:
    record = run(wf, status="completed", started_at=at(0), finished_at=at(10))
    await store.insert_run(record)
    return record


async def _workflow(store: Store) -> str:
    record = workflow()
    await store.create_workflow(record)
    return record.id


async def test_a_payload_goes_with_the_last_run_that_refers_to_it(store: Store) -> None:
    wf = await _workflow(store)
    first, second = await _ended(store, wf), await _ended(store, wf)
    await store.put_payload("shared", BIG, first.id)
    await store.put_payload("shared", BIG, second.id)
    await store.put_payload("shared", BIG, second.id)  # a repeat (an activity run again)
    await store.put_payload("own", b"mine", first.id)

    batch = await store.delete_ended_runs(at(100), 1)
    (deleted,) = [r for r in (first, second) if await store.get_run(r.id) is None]
    kept = second if deleted is first else first
    # Only the deleted run's own payload went; the shared one stays for the other run.
    assert (batch.deleted, batch.payloads) == (1, 1 if deleted is first else 0)
    assert await store.get_payload("shared") == BIG
    assert await store.get_payload("own") == (None if deleted is first else b"mine")

    last = await store.delete_ended_runs(at(100), 500)
    assert last.deleted == 1 and await store.get_run(kept.id) is None
    assert await store.get_payload("shared") is None
    assert await store.get_payload("own") is None
    assert batch.payloads + last.payloads == 2
    # Again: nothing left to delete, no payload counted twice.
    assert (await store.delete_ended_runs(at(100), 500)).payloads == 0


async def test_open_and_recent_runs_keep_their_payloads_under_retention(store: Store) -> None:
    wf = await _workflow(store)
    ended = await _ended(store, wf)
    running = run(wf, status="running", started_at=at(0))
    recent = run(wf, status="completed", started_at=at(0), finished_at=at(500))
    for record in (running, recent):
        await store.insert_run(record)
    for record in (ended, running, recent):
        await store.put_payload(f"of-{record.id}", BIG, record.id)

    assert (await store.delete_ended_runs(at(100), 500)).payloads == 1
    assert await store.get_payload(f"of-{ended.id}") is None
    assert await store.get_payload(f"of-{running.id}") == BIG
    assert await store.get_payload(f"of-{recent.id}") == BIG


async def test_deleting_a_workflow_deletes_the_payloads_only_its_runs_use(store: Store) -> None:
    doomed, other = await _workflow(store), await _workflow(store)
    mine, theirs = run(doomed), run(other)
    for record in (mine, theirs):
        await store.insert_run(record)
    await store.put_payload("mine", BIG, mine.id)
    await store.put_payload("shared", b"both", mine.id)
    await store.put_payload("shared", b"both", theirs.id)

    assert await store.delete_workflow(doomed) is True
    # Handed to the sweep (a run may still be closing in Temporal), which takes them.
    assert await store.get_payload("mine") == BIG
    assert (await _swept(store)).payloads == 1
    assert await store.get_payload("mine") is None
    assert await store.get_payload("shared") == b"both"
    assert await store.delete_workflow(other) is True
    await _swept(store)
    assert await store.get_payload("shared") is None


async def test_a_deleted_workflows_run_writing_on_keeps_its_reference_the_sweeps(
    store: Store,
) -> None:
    wf = await _workflow(store)
    closing = run(wf)
    await store.insert_run(closing)
    await store.put_payload("output", BIG, closing.id)
    assert await store.delete_workflow(wf) is True
    await store.put_payload("output", BIG, closing.id)  # its worker writes the same again
    assert (await _swept(store)).payloads == 1


async def test_a_deleted_workflows_run_putting_a_new_payload_gives_it_to_the_sweep(
    store: Store,
) -> None:
    # Its cancel outlived the delete's wait: its worker stores an output not seen before.
    wf = await _workflow(store)
    closing = run(wf)
    await store.insert_run(closing)
    await store.put_payload("input", BIG, closing.id)
    assert await store.delete_workflow(wf) is True
    await store.put_payload("late output", b"late", closing.id)
    swept = await _swept(store)
    assert (swept.refs, swept.payloads) == (2, 2)
    assert await store.get_payload("late output") is None


async def test_a_put_for_a_run_the_store_does_not_have_is_the_sweeps(store: Store) -> None:
    # No record, no other reference (its workflow's delete found it with none): nothing
    # but the sweep would ever delete it. A run that is there keeps its own.
    wf = await _workflow(store)
    present = run(wf)
    await store.insert_run(present)
    await store.put_payload("orphan", BIG, "run-no-record")
    await store.put_payload("kept", BIG, present.id)
    assert (await _swept(store)).payloads == 1
    assert await store.get_payload("orphan") is None
    assert await store.get_payload("kept") == BIG


async def test_a_put_landing_inside_a_mongodb_workflow_delete_is_the_sweeps(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MongoDB hands the runs' references over before deleting the runs (no transaction):
    # a put landing in between finds the run there, its other references the sweep's.
    if not isinstance(store, MongoStore) or not is_fake(mongo_for_tests()[0]):
        pytest.skip("MongoDB's order of writes, forced on the fake (SQLite: one transaction)")
    wf = await _workflow(store)
    closing, quiet = run(wf), run(wf)
    for record in (closing, quiet):
        await store.insert_run(record)
    await store.put_payload("input", BIG, closing.id)
    real = FakeCollection.delete_many

    async def put_first(self: FakeCollection, filter_: Any) -> Any:
        if self._sync.name == "runs":
            await store.put_payload("late output", b"late", closing.id)
            await store.put_payload("first output", b"first", quiet.id)  # none of its own yet
        return await real(self, filter_)

    monkeypatch.setattr(FakeCollection, "delete_many", put_first)
    assert await store.delete_workflow(wf) is True
    monkeypatch.setattr(FakeCollection, "delete_many", real)
    assert (await _swept(store)).payloads == 3
    assert [await store.get_payload(k) for k in ("late output", "first output")] == [None, None]


async def _swept(store: Store) -> FiringRefsDeleted:
    return await store.delete_firing_payloads(datetime.now(UTC) + timedelta(hours=1), 500)


async def test_an_unstarted_run_is_deleted_with_its_payloads(store: Store) -> None:
    wf = await _workflow(store)
    record = run(wf, rev=RECORDED_REV)
    await store.insert_run(record)
    await store.put_payload("start", BIG, record.id)
    assert await store.delete_unstarted_run(record.id) is True
    assert await store.get_payload("start") is None


async def test_a_payload_put_for_no_run_is_kept_for_good(store: Store) -> None:
    wf = await _workflow(store)
    first, second = await _ended(store, wf), await _ended(store, wf)
    await store.put_payload("anonymous", BIG)
    await store.put_payload("anonymous", BIG, first.id)
    await store.put_payload("later", b"later", second.id)
    await store.put_payload("later", b"later")

    batch = await store.delete_ended_runs(at(100), 500)
    assert (batch.deleted, batch.payloads) == (2, 0)
    assert await store.get_payload("anonymous") == BIG
    assert await store.get_payload("later") == b"later"


async def test_a_payload_put_again_after_its_delete_is_there_again(store: Store) -> None:
    wf = await _workflow(store)
    gone, later = await _ended(store, wf), run(wf)
    await store.put_payload("again", BIG, gone.id)
    assert (await store.delete_ended_runs(at(100), 500)).payloads == 1
    await store.insert_run(later)
    await store.put_payload("again", BIG, later.id)
    assert await store.get_payload("again") == BIG
    assert await store.delete_workflow(wf) is True
    await _swept(store)
    assert await store.get_payload("again") is None


async def _after(yields: int, call: Awaitable[None]) -> None:
    for _ in range(yields):
        await asyncio.sleep(0)
    await call


async def test_a_put_racing_the_delete_of_the_last_other_run_leaves_the_payload(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two stores on one database, as two processes (SQLite: two connections; MongoDB: two
    # clients). Each fake MongoDB call first yields a seeded number of times, so the
    # delete's and the put's writes interleave in every order (a real server's would).
    seeded = random.Random(7)

    def yielding(call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def call_later(*args: Any, **kwargs: Any) -> Any:
            for _ in range(seeded.choice((0, 0, 1, 2, 12))):
                await asyncio.sleep(0)
            return await call(*args, **kwargs)

        return call_later

    for name in ("update_one", "find_one", "find_one_and_update", "delete_one", "delete_many"):
        monkeypatch.setattr(FakeCollection, name, yielding(getattr(FakeCollection, name)))
    deleting, putting = store_factory(), store_factory()
    await deleting.connect()
    await putting.connect()
    try:
        for round_ in range(60):
            wf = await _workflow(deleting)
            key, doomed, other = f"k{round_}", run(wf, rev=RECORDED_REV), run(wf)
            await deleting.insert_run(doomed)
            await deleting.insert_run(other)
            await deleting.put_payload(key, BIG, doomed.id)
            await asyncio.gather(
                deleting.delete_unstarted_run(doomed.id),
                _after(seeded.randrange(40), putting.put_payload(key, BIG, other.id)),
            )
            assert await putting.get_payload(key) == BIG, round_
            assert await deleting.delete_workflow(wf) is True
            await _swept(deleting)
            assert await putting.get_payload(key) is None, round_
    finally:
        await deleting.close()
        await putting.close()


async def test_retention_on_mongodb_keeps_the_payloads_of_a_run_reopened_meanwhile(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found due, then reopened (a refused start put back to pending) just before the runs'
    # conditional delete: the run stays, and so must the payloads it refers to.
    if not isinstance(store, MongoStore) or not is_fake(mongo_for_tests()[0]):
        pytest.skip("MongoDB's order of writes, forced on the fake (SQLite: one transaction)")
    wf = await _workflow(store)
    ended = await _ended(store, wf)
    await store.put_payload("input", BIG, ended.id)
    real = FakeCollection.delete_many

    async def reopened_first(self: FakeCollection, filter_: Any) -> Any:
        if self._sync.name == "runs":
            await store.update_run(
                ended.id, START_FAILED_REV, {"status": "pending", "finished_at": None}
            )
        return await real(self, filter_)

    monkeypatch.setattr(FakeCollection, "delete_many", reopened_first)
    batch = await store.delete_ended_runs(at(100), 500)
    assert (batch.deleted, batch.payloads) == (0, 0)
    kept = await store.get_run(ended.id)
    assert kept is not None and kept.status == "pending"
    assert await store.get_payload("input") == BIG


async def test_a_payload_stored_on_mongodb_before_run_references_is_kept_for_good() -> None:
    # The chunks as a store before references wrote them: no generation, no head, no
    # reference. Any run may use them, so a later run's put and delete leave them.
    url, options = mongo_for_tests()
    if not is_fake(url):
        pytest.skip("writes legacy documents into a database of its own: only on the fake")
    store = MongoStore(url, database="legacy_payloads", **options)
    await store.connect()
    try:
        chunk = {"key": "old", "index": 0, "count": 1, "data": BIG}
        await store._db().payloads.update_one(
            {"_id": "old:0"}, {"$setOnInsert": chunk}, upsert=True
        )
        wf = await _workflow(store)
        new = await _ended(store, wf)
        await store.put_payload("old", BIG, new.id)
        assert (await store.delete_ended_runs(at(100), 500)).payloads == 0
        assert await store.get_payload("old") == BIG
    finally:
        await store.close()
        forget(url)


# A schedule's firings refer to their own payloads under their trigger workflow's id (no
# run's), the schedule to its argument under the id of the workflow it starts.
FIRING, SCHEDULE = "sched-a-run-2026-11-30T09:00:00Z", "sched-a-run"
LATER = datetime.now(UTC) + timedelta(hours=1)


async def test_a_firings_payloads_go_once_old_unless_a_run_or_its_schedule_uses_them(
    store: Store,
) -> None:
    wf = await _workflow(store)
    started = await _ended(store, wf)
    await store.put_payload("request", BIG, FIRING, PayloadHolder.FIRING)
    await store.put_payload("input", b"i", FIRING, PayloadHolder.FIRING)
    await store.put_payload("input", b"i", started.id)  # the run it started keeps its copy
    await store.put_payload("argument", b"a", SCHEDULE, PayloadHolder.SCHEDULE)
    await store.put_payload("argument", b"a", FIRING, PayloadHolder.FIRING)

    # Made now: not yet before an hour ago.
    young = await store.delete_firing_payloads(datetime.now(UTC) - timedelta(hours=1), 500)
    assert (young.refs, young.payloads) == (0, 0)
    assert await store.get_payload("request") == BIG

    swept = await store.delete_firing_payloads(LATER, 500)
    assert (swept.refs, swept.payloads) == (3, 1)
    assert await store.get_payload("request") is None
    assert await store.get_payload("input") == b"i"
    assert await store.get_payload("argument") == b"a"
    assert (await store.delete_firing_payloads(LATER, 500)).refs == 0
    # The run's and the schedule's references are no firing's: they stay.
    await store.delete_ended_runs(at(100), 500)
    assert await store.get_payload("input") is None
    assert await store.get_payload("argument") == b"a"


async def test_a_deleted_schedules_own_payload_goes_with_the_next_sweep_after_the_bound(
    store: Store,
) -> None:
    await store.put_payload("argument", b"a", SCHEDULE, PayloadHolder.SCHEDULE)
    await store.put_payload("other", b"o", "sched-b-run", PayloadHolder.SCHEDULE)
    assert (await store.delete_firing_payloads(LATER, 500)).refs == 0

    await store.end_schedule_payloads(SCHEDULE)
    # Handed over as made now: a firing still running reads it meanwhile.
    assert (
        await store.delete_firing_payloads(datetime.now(UTC) - timedelta(hours=1), 500)
    ).refs == 0
    assert await store.get_payload("argument") == b"a"
    swept = await store.delete_firing_payloads(LATER, 500)
    assert (swept.refs, swept.payloads) == (1, 1)
    assert await store.get_payload("argument") is None
    assert await store.get_payload("other") == b"o"


async def test_a_schedule_made_again_under_its_id_keeps_its_argument(store: Store) -> None:
    await store.put_payload("argument", b"a", SCHEDULE, PayloadHolder.SCHEDULE)
    await store.end_schedule_payloads(SCHEDULE)
    await store.put_payload("argument", b"a", SCHEDULE, PayloadHolder.SCHEDULE)
    assert (await store.delete_firing_payloads(LATER, 500)).refs == 0
    assert await store.get_payload("argument") == b"a"


async def test_an_updated_schedule_hands_over_the_arguments_it_no_longer_carries(
    store: Store,
) -> None:
    for key in ("first", "second", "carried"):
        await store.put_payload(key, b"a", SCHEDULE, PayloadHolder.SCHEDULE)
    await store.put_payload("other schedule's", b"o", "sched-b-run", PayloadHolder.SCHEDULE)
    await asyncio.sleep(0.01)
    since = datetime.now(UTC)
    await asyncio.sleep(0.01)
    await store.put_payload("concurrent", b"c", SCHEDULE, PayloadHolder.SCHEDULE)

    await store.replace_schedule_payloads(SCHEDULE, ["carried"], since)
    # Handed over as made now (a firing started before the update reads it meanwhile).
    young = await store.delete_firing_payloads(datetime.now(UTC) - timedelta(hours=1), 500)
    assert (young.refs, young.payloads) == (0, 0)
    swept = await store.delete_firing_payloads(LATER, 500)
    assert (swept.refs, swept.payloads) == (2, 2)
    keys = ("first", "second", "carried", "concurrent", "other schedule's")
    assert [await store.get_payload(k) is not None for k in keys] == [
        False,
        False,
        True,
        True,
        True,
    ]

    # A concurrent update that found "carried" replaced (its description came first): the
    # one whose description shows it carried takes it back.
    await store.replace_schedule_payloads(SCHEDULE, ["concurrent"], datetime.now(UTC))
    await store.replace_schedule_payloads(SCHEDULE, ["carried"], since)
    swept = await store.delete_firing_payloads(LATER, 500)
    assert (swept.refs, swept.payloads) == (0, 0)
    # To an argument small enough for history: every copy goes.
    await store.replace_schedule_payloads(SCHEDULE, [], datetime.now(UTC))
    assert (await store.delete_firing_payloads(LATER, 500)).payloads == 2
    assert await store.get_payload("other schedule's") == b"o"


async def test_the_firings_sweep_goes_a_batch_at_a_time(store: Store) -> None:
    for n in range(3):
        await store.put_payload(f"request-{n}", b"r", f"{FIRING}-{n}", PayloadHolder.FIRING)
    first = await store.delete_firing_payloads(LATER, 2)
    assert (first.refs, first.payloads) == (2, 2)
    rest = await store.delete_firing_payloads(LATER, 2)
    assert (rest.refs, rest.payloads) == (1, 1)
    assert [await store.get_payload(f"request-{n}") for n in range(3)] == [None] * 3


# A worker before firings' references were recorded (SQLite schema version 11) named a
# firing's workflow as it named a run's: still running in a rolling deploy, it writes so
# onto a migrated store (and every such reference stored before the migration is so).
OLDER_FIRING = "sched-a-run-2026-11-30T22:42:55Z"


async def put_as_older_worker(store: Store, key: str, data: bytes, workflow_id: str) -> None:
    """`put_payload` as that worker's code wrote it: the payload, and a reference naming the
    workflow only (SQLite: the columns' defaults, holder 'run' and no made_at; MongoDB: no
    holder, no made_at)."""
    if isinstance(store, MongoStore):
        db = store._db()
        await db.payload_refs.update_one(
            {"_id": f"{key} {workflow_id}"},
            {"$setOnInsert": {"key": key, "run_id": workflow_id}},
            upsert=True,
        )
        head = await db.payload_heads.find_one_and_update(
            {"_id": key},
            {"$setOnInsert": {"gen": "older"}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        chunk = {"key": key, "index": 0, "count": 1, "data": data, "gen": head["gen"]}
        await db.payloads.update_one({"_id": f"{key}:0"}, {"$set": chunk}, upsert=True)
        return
    assert isinstance(store, SqliteStore)
    with sqlite3.connect(store.path) as db:
        db.execute("INSERT OR IGNORE INTO payloads (key, data) VALUES (?, ?)", (key, data))
        db.execute(
            "INSERT OR IGNORE INTO payload_refs (key, run_id) VALUES (?, ?)", (key, workflow_id)
        )


async def test_an_older_workers_firing_references_go_a_bound_after_the_sweep_finds_them(
    store: Store,
) -> None:
    wf = await _workflow(store)
    started = await _ended(store, wf)
    await put_as_older_worker(store, "request", BIG, OLDER_FIRING)
    await put_as_older_worker(store, "input", b"i", OLDER_FIRING)
    await put_as_older_worker(store, "input", b"i", started.id)  # the run's copy
    await put_as_older_worker(store, "run's own", BIG, started.id)
    await put_as_older_worker(store, "argument", b"a", SCHEDULE)  # the schedule's own

    # First found now: handed over as made now, not yet an hour old.
    assert await store.adopt_older_firing_refs(500) == 2
    assert await store.adopt_older_firing_refs(500) == 0
    young = await store.delete_firing_payloads(datetime.now(UTC) - timedelta(hours=1), 500)
    assert (young.refs, young.payloads) == (0, 0)
    assert await store.get_payload("request") == BIG

    swept = await store.delete_firing_payloads(LATER, 500)
    assert (swept.refs, swept.payloads) == (2, 1)
    assert await store.get_payload("request") is None
    # The run's references, as old, and the schedule's stay; the run's reads back.
    assert await store.get_payload("input") == b"i"
    assert await store.get_payload("run's own") == BIG
    assert await store.get_payload("argument") == b"a"
    assert await store.adopt_older_firing_refs(500) == 0
    assert (await store.delete_firing_payloads(LATER, 500)).refs == 0
    batch = await store.delete_ended_runs(at(100), 500)
    assert (batch.deleted, batch.payloads) == (1, 2)
    assert await store.get_payload("argument") == b"a"


async def test_a_run_id_never_has_a_firings_form_and_a_run_keeps_its_references(
    store: Store,
) -> None:
    wf = await _workflow(store)
    assert FIRING_ID.match(OLDER_FIRING) and not FIRING_ID.match(SCHEDULE)
    for run_id in (new_run_id(wf), new_run_id(wf, "key"), f"{OLDER_FIRING}x", f"x{OLDER_FIRING}"):
        assert not FIRING_ID.match(run_id), run_id
    # Were there a run under a firing's id, its references would stay its own.
    odd = run(wf, id="sched-b-run-2026-11-30T22:42:55Z", status="completed", finished_at=at(10))
    await store.insert_run(odd)
    await put_as_older_worker(store, "odd", BIG, odd.id)
    assert await store.adopt_older_firing_refs(500) == 0
    assert (await store.delete_firing_payloads(LATER, 500)).refs == 0
    assert await store.get_payload("odd") == BIG
    assert (await store.delete_ended_runs(at(100), 500)).payloads == 1


async def test_an_older_workers_firing_references_are_handed_over_a_batch_at_a_time(
    store: Store,
) -> None:
    for n in range(3):
        await put_as_older_worker(
            store, f"request-{n}", b"r", f"sched-a-run-2026-11-30T22:42:5{n}Z"
        )
    assert [await store.adopt_older_firing_refs(2) for _ in range(3)] == [2, 1, 0]
    assert (await store.delete_firing_payloads(LATER, 500)).payloads == 3
