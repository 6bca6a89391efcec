"""`Store.delete_ended_runs`, the run retention's batch, on SQLite and on MongoDB (the named
fake here): ended runs go with their node runs and events, open ones stay whatever their
age, and sweeps racing each other delete a run once."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from activities.metrics import RunMetrics
from activities.store import sqlite as sqlite_module
from activities.store.base import Store
from activities.store.records import RunRecord
from activities.store.sqlite import SqliteStore
from app.run_retention import RunRetention
from tests.store.builders import at, node_run, run, workflow
from tests.store.conftest import StoreFactory


async def _run(store: Store, wf: str, status: str, started: float, **fields: object) -> RunRecord:
    record = run(wf, status=status, started_at=at(started), **fields)
    await store.insert_run(record)
    await store.upsert_node_run(node_run(record.id, status="completed", started_at=at(started)))
    await store.append_event(record.id, {"type": "run_started", "runId": record.id})
    return record


async def test_runs_that_ended_before_the_cutoff_go_with_their_node_runs_and_events(
    store: Store,
) -> None:
    wf = workflow()
    await store.create_workflow(wf)
    completed = await _run(store, wf.id, "completed", 0, finished_at=at(10))
    failed = await _run(store, wf.id, "failed", 5, finished_at=at(20))
    cancelled = await _run(store, wf.id, "cancelled", 6, finished_at=at(30))
    # Ended after the cutoff, and open runs far older than it: all stay.
    recent = await _run(store, wf.id, "completed", 50, finished_at=at(200))
    spanning = await _run(store, wf.id, "completed", 50, finished_at=at(150))
    opened = [await _run(store, wf.id, s, 0) for s in ("pending", "running", "paused")]
    gated = await _run(
        store, wf.id, "awaiting_approval", 0, pending_requirements=[{"stepId": "step-1"}]
    )
    await store.put_payload("sha256:kept", b"x" * 10)

    batch = await store.delete_ended_runs(at(100), 500)

    assert (batch.found, batch.deleted) == (3, 3)
    assert batch.oldest_end == at(10)
    gone = [completed.id, failed.id, cancelled.id]
    for run_id in gone:
        assert await store.get_run(run_id) is None
        assert await store.list_events(run_id, 0, 10) == []
    assert await store.list_node_runs(gone) == []
    kept = [recent, spanning, *opened, gated]
    for record in kept:
        assert await store.get_run(record.id) is not None
        assert len(await store.list_events(record.id, 0, 10)) == 1
    assert len(await store.list_node_runs([r.id for r in kept])) == len(kept)
    _, total = await store.list_runs(wf.id)
    assert total == len(kept)
    assert await store.get_payload("sha256:kept") == b"x" * 10
    # Again: nothing left to delete.
    again = await store.delete_ended_runs(at(100), 500)
    assert (again.found, again.deleted, again.oldest_end) == (0, 0, None)


async def test_a_batch_deletes_at_most_its_limit(store: Store) -> None:
    wf = workflow()
    await store.create_workflow(wf)
    for i in range(5):
        await _run(store, wf.id, "completed", i, finished_at=at(i + 1))
    first = await store.delete_ended_runs(at(100), 3)
    assert (first.found, first.deleted) == (3, 3)
    second = await store.delete_ended_runs(at(100), 3)
    assert (second.found, second.deleted) == (2, 2)
    assert (await store.list_runs(wf.id))[1] == 0


async def test_an_ended_run_without_an_end_time_goes_by_its_last_update(store: Store) -> None:
    wf = workflow()
    await store.create_workflow(wf)
    stale = await _run(store, wf.id, "failed", 0, updated_at=at(1))
    fresh = await _run(store, wf.id, "failed", 0, updated_at=at(500))
    batch = await store.delete_ended_runs(at(100), 500)
    assert batch.deleted == 1
    assert await store.get_run(stale.id) is None
    assert await store.get_run(fresh.id) is not None


async def test_sweeps_racing_each_other_delete_each_run_once(
    store_factory: StoreFactory,
) -> None:
    # Two workers' stores on one database (two processes, as two workers are).
    first, second = store_factory(), store_factory()
    await first.connect()
    await second.connect()
    try:
        wf = workflow()
        await first.create_workflow(wf)
        for i in range(40):
            await _run(first, wf.id, "completed", i, finished_at=at(i + 1))
        batches = await asyncio.gather(
            *(s.delete_ended_runs(at(100), 10) for s in (first, second, first, second))
        )
        more = await asyncio.gather(
            *(s.delete_ended_runs(at(100), 10) for s in (first, second, first, second))
        )
        assert sum(b.deleted for b in [*batches, *more]) == 40
        assert (await second.list_runs(wf.id))[1] == 0
    finally:
        await first.close()
        await second.close()


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = SqliteStore(tmp_path / "data" / "trellis.db")
    await opened.connect()
    yield opened
    await opened.close()


async def test_a_batch_on_sqlite_stops_at_its_rows_and_says_more_remain(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 370 runs of 4,500 rows each went in one transaction and held every other write
    # 5.8 s (found by an audit): a batch is bounded by its rows too.
    monkeypatch.setattr(sqlite_module, "DELETE_ROWS", 7)
    wf = workflow()
    await sqlite_store.create_workflow(wf)
    ended = [
        await _run(sqlite_store, wf.id, "completed", i, finished_at=at(10 + i)) for i in range(5)
    ]
    # Each run is three rows (itself, a node run, an event): two fit within 7.
    first = await sqlite_store.delete_ended_runs(at(100), 500)
    assert (first.found, first.deleted, first.more) == (5, 2, True)
    assert first.oldest_end == at(10)
    done = [first]
    while done[-1].more:
        done.append(await sqlite_store.delete_ended_runs(at(100), 500))
    assert [b.deleted for b in done] == [2, 2, 1]
    for record in ended:
        assert await sqlite_store.get_run(record.id) is None
    # A full batch says more may remain; a run larger than the bound goes alone.
    await _run(sqlite_store, wf.id, "completed", 0, finished_at=at(1))
    await _run(sqlite_store, wf.id, "completed", 0, finished_at=at(2))
    full = await sqlite_store.delete_ended_runs(at(100), 1)
    assert (full.found, full.deleted, full.more) == (1, 1, True)
    monkeypatch.setattr(sqlite_module, "DELETE_ROWS", 1)
    alone = await sqlite_store.delete_ended_runs(at(100), 500)
    assert (alone.found, alone.deleted, alone.more) == (1, 1, False)


async def test_a_backlog_is_swept_over_several_passes_each_within_its_budget(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Turned on over a large backlog, one pass deleted it all before the reconciler went on
    # (found by a review): a pass sweeps for its budget, and the next pass goes on at once.
    monkeypatch.setattr(sqlite_module, "DELETE_ROWS", 3)  # one run of three rows a batch
    wf = workflow()
    await sqlite_store.create_workflow(wf)
    for i in range(3):
        await _run(sqlite_store, wf.id, "completed", 0, finished_at=at(1 + i))
    metrics = RunMetrics()
    retention = RunRetention(sqlite_store, timedelta(days=1), metrics, every=timedelta(hours=1))
    passes = [await retention.run_if_due(budget=0) for _ in range(4)]
    assert passes == [1, 1, 1, 0]  # the last: nothing left, and the hour not passed
    assert metrics.runs_deleted._value.get() == 3


async def test_a_deleted_run_is_told_from_one_never_stored_where_counters_are_kept(
    store: Store,
) -> None:
    # SQLite's change counter outlives its run; MongoDB keeps none, so no trace either.
    wf, other = workflow(), workflow()
    await store.create_workflow(wf)
    await store.create_workflow(other)
    swept = await _run(store, wf.id, "completed", 0, finished_at=at(10))
    kept = await _run(store, wf.id, "running", 0)
    with_workflow = await _run(store, other.id, "running", 0)
    await store.delete_ended_runs(at(100), 500)
    await store.delete_workflow(other.id)
    keeps_counters = await store.run_changes(kept.id) is not None
    assert await store.run_was_deleted(swept.id) is keeps_counters
    assert await store.run_was_deleted(with_workflow.id) is keeps_counters
    assert await store.run_was_deleted(kept.id) is False
    assert await store.run_was_deleted("run-never-stored") is False


async def test_the_wal_a_sweep_grew_is_cut_back_to_its_limit_after_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It kept the size the sweep grew it to (~60 MB seen) until every process stopped.
    limit = 256 * 1024
    monkeypatch.setattr(sqlite_module, "WAL_SIZE_LIMIT_BYTES", limit)
    store = SqliteStore(tmp_path / "trellis.db")
    await store.connect()
    wal = tmp_path / "trellis.db-wal"
    try:
        wf = workflow()
        await store.create_workflow(wf)
        for i in range(60):
            record = await _run(store, wf.id, "completed", i, finished_at=at(i + 1))
            output = {"text": "x" * 2000}
            await asyncio.gather(
                *(
                    store.upsert_node_run(node_run(record.id, output_snapshot=output))
                    for _ in range(20)
                )
            )
        assert (await store.delete_ended_runs(at(100), 500)).deleted == 60
        assert wal.stat().st_size > 4 * limit
        # A checkpoint (another process's, or this one's own when the log is long), then
        # the next write starts the log again, cut back to the limit.
        with contextlib.closing(sqlite3.connect(tmp_path / "trellis.db")) as other:
            other.execute("PRAGMA wal_checkpoint(PASSIVE)")
        await store.create_workflow(workflow())
        assert wal.stat().st_size <= limit
    finally:
        await store.close()
