"""What only the SQLite store promises: WAL, versioned schema, a second process on the file."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.store.access import Grant, WorkflowAccess
from activities.store.base import PayloadHolder, StoreError, StoreSchemaTooNew
from activities.store.sqlite import SqliteStore
from activities.store.sqlite_schema import SCHEMA_VERSION
from temporal_workflows.definition import HumanReview, WorkflowNode, WorkflowSpec
from tests.store.builders import at, new_id, node_run, run, workflow
from tests.store.future_schema import FUTURE_VERSION, migrate_to_future

REPO_ROOT = Path(__file__).resolve().parents[2]
# Schema versions at which a migration began (MIGRATIONS[n] takes n to n + 1).
BEFORE_ACLS, BEFORE_CHANGE_COUNTERS, BEFORE_EVENT_KEYS, BEFORE_STORED_ACCESS = 2, 3, 4, 6
BEFORE_REFOLD, BEFORE_SCHEDULE_COLUMN, BEFORE_PAYLOAD_REFS, BEFORE_REF_HOLDERS = 7, 8, 9, 10


def _undo_stored_access(db: sqlite3.Connection) -> None:
    """Take a file back to before the stored access (what MIGRATIONS[6] created)."""
    db.execute("DROP TRIGGER workflows_access_insert")
    db.execute("DROP TRIGGER workflows_access_update")
    db.execute("ALTER TABLE workflows DROP COLUMN access")


def _undo_event_keys(db: sqlite3.Connection) -> None:
    """Take a file back to before event keys (what MIGRATIONS[4] created)."""
    _undo_stored_access(db)
    db.execute("DROP INDEX events_run_key")
    db.execute("ALTER TABLE events DROP COLUMN key")


def _undo_change_counters(db: sqlite3.Connection) -> None:
    """Take a file back to before the change counters (what MIGRATIONS[3] created)."""
    _undo_event_keys(db)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE run_changes")
    db.execute("DROP TABLE workflow_run_changes")


def _take_back(db_path: Path, version: int, undo: Callable[[sqlite3.Connection], None]) -> None:
    """Make a closed file look as it was at schema `version`, `undo` removing what later
    migrations created; the next connect migrates it again."""
    with sqlite3.connect(db_path) as db:
        undo(db)
        db.execute(f"PRAGMA user_version = {version}")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "dir" / "trellis.db"


async def test_connect_creates_parent_dirs_and_uses_wal(db_path: Path) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_connect_records_the_schema_version(db_path: Path) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_reconnecting_to_a_migrated_file_keeps_its_data(db_path: Path) -> None:
    first = SqliteStore(db_path)
    await first.connect()
    event_id = await first.append_event("run-1", {"type": "x"})
    await first.close()
    second = SqliteStore(db_path)
    await second.connect()
    try:
        assert await second.list_events("run-1", 0, 10) == [{"type": "x", "id": event_id}]
    finally:
        await second.close()


def test_a_file_that_cannot_be_opened_fails_with_nothing_left_running(tmp_path: Path) -> None:
    # A process that exits on the error (trellis api/worker/dev at start-up) closes its
    # event loop at once; aiosqlite's thread, stopped without being waited for, then met
    # the closed loop: "Exception in thread … Event loop is closed" after the error line.
    (tmp_path / "store.db").mkdir()
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path

        import uvloop
        from activities.store.base import PayloadHolder, StoreError, StoreSchemaTooNew
        from activities.store.sqlite import SqliteStore

        async def main() -> None:
            try:
                await SqliteStore(Path({str(tmp_path / "store.db")!r})).connect()
            except StoreError as exc:
                print(exc)

        for _ in range(20):
            # Closed as soon as the error is in, as a process exiting on it closes it.
            loop = uvloop.new_event_loop()
            loop.run_until_complete(main())
            loop.close()
        time.sleep(0.2)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("unable to open database file") == 20


def _refusal(version: int) -> str:
    return (
        f"the store's schema version {version} is newer than this code ({SCHEMA_VERSION}),"
        f" and changes that code at {SCHEMA_VERSION} cannot use: roll forward, or restore the"
        ' file saved before the upgrade (docs/operations.md, "Deploys, mixed versions and'
        ' rollbacks")'
    )


def _schema_of(db_path: Path) -> tuple[int, list[tuple[str, ...]], list[tuple[int, ...]]]:
    """The file's version, its tables, indexes and triggers, and what schema_compat says."""
    with sqlite3.connect(db_path) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        objects = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        compat = db.execute("SELECT version, oldest_code FROM schema_compat").fetchall()
    return version, objects, sorted(compat)


async def test_a_newer_schema_without_a_say_is_refused(db_path: Path) -> None:
    # A file whose newer version says nothing of who may use it (set by hand, or by a
    # release before schema_compat) is refused as before, with what to do.
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    store = SqliteStore(db_path)
    with pytest.raises(StoreSchemaTooNew) as refused:
        await store.connect()
    assert str(refused.value) == _refusal(SCHEMA_VERSION + 1)
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []


async def test_a_file_records_the_oldest_code_that_may_use_it(db_path: Path) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    # Migrations 11 to 13 only added: code at 10 may use the file (10 changed references).
    assert _schema_of(db_path)[2] == [(SCHEMA_VERSION, 10)]


async def test_a_newer_file_an_additive_migration_made_is_used_as_it_is(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A rollback after a release whose migration only added: this code keeps the file.
    store = SqliteStore(db_path)
    await store.connect()
    before = workflow()
    await store.create_workflow(before)
    await store.close()
    await migrate_to_future(db_path, additive=True)
    migrated = _schema_of(db_path)
    assert migrated[0] == FUTURE_VERSION and migrated[2] == [
        (SCHEMA_VERSION, 10),
        (FUTURE_VERSION, 10),
    ]

    store = SqliteStore(db_path)
    await store.connect()
    try:
        assert (await store.get_workflow(before.id)) == before
        record = workflow()
        await store.create_workflow(record)
        started = run(record.id)
        await store.insert_run(started)
        await store.upsert_node_run(node_run(started.id))
        event_id = await store.append_event(started.id, {"type": "x"})
        assert (await store.get_run(started.id)) == started
        assert await store.list_events(started.id, 0, 10) == [{"type": "x", "id": event_id}]
    finally:
        await store.close()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "trellis.store"]
    assert said == [
        (
            "WARNING",
            f"store schema version {FUTURE_VERSION} is newer than this code ({SCHEMA_VERSION});"
            " code from version 10 on may use it, so it is used as it is, not migrated: roll"
            " forward when you can",
        )
    ]
    assert _schema_of(db_path) == migrated  # not migrated, nor marked by this code
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT note FROM future_notes").fetchall() == [("kept",)]


async def test_a_newer_file_a_migration_changed_is_refused_and_left_as_it_is(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.create_workflow(workflow())
    await store.close()
    await migrate_to_future(db_path, additive=False)
    migrated = _schema_of(db_path)
    assert migrated[2] == [(SCHEMA_VERSION, 10), (FUTURE_VERSION, FUTURE_VERSION)]
    store = SqliteStore(db_path)
    with pytest.raises(StoreSchemaTooNew) as refused:
        await store.connect()
    assert str(refused.value) == _refusal(FUTURE_VERSION)
    assert _schema_of(db_path) == migrated


async def test_using_a_store_before_connect_is_a_store_error(db_path: Path) -> None:
    with pytest.raises(StoreError, match="not connected"):
        await SqliteStore(db_path).get_run(new_id())


async def test_a_second_process_writes_while_this_one_does(db_path: Path) -> None:
    run_id = new_id()
    store = SqliteStore(db_path)
    await store.connect()
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from activities.store.sqlite import SqliteStore

        async def main():
            store = SqliteStore(Path({str(db_path)!r}))
            await store.connect()
            for n in range(150):
                await store.append_event({run_id!r}, {{"by": "worker", "n": n}})
            await store.close()

        asyncio.run(main())
        """
    )
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=REPO_ROOT, stderr=asyncio.subprocess.PIPE
    )
    try:
        for n in range(150):
            await store.append_event(run_id, {"by": "api", "n": n})
        _, stderr = await asyncio.wait_for(worker.communicate(), timeout=60)
        assert worker.returncode == 0, stderr.decode()
        events = await store.list_events(run_id, 0, 1000)
        assert len(events) == 300
        assert len({e["id"] for e in events}) == 300
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
        await store.close()


async def test_several_stores_opening_a_fresh_file_at_once_all_connect(db_path: Path) -> None:
    stores = [SqliteStore(db_path) for _ in range(6)]
    try:
        await asyncio.gather(*(store.connect() for store in stores))
        ids = await asyncio.gather(*(store.append_event("r", {}) for store in stores))
        assert len(set(ids)) == 6
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_workflows_from_before_acls_belong_to_the_dev_caller(db_path: Path) -> None:
    # A file at the schema version before ACLs, holding a workflow without an owner.
    store = SqliteStore(db_path)
    await store.connect()
    record = workflow()
    await store.create_workflow(record)
    await store.close()
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE workflows SET doc = json_remove(doc, '$.owner', '$.grants')")
        db.execute("DROP TABLE workflow_viewers")
        _undo_change_counters(db)
        db.execute(f"PRAGMA user_version = {BEFORE_ACLS}")
    store = SqliteStore(db_path)
    await store.connect()
    try:
        loaded = await store.get_workflow(record.id)
        assert loaded is not None and loaded.owner == "dev" and loaded.grants == []
        access = await store.get_workflow_access(record.id)
        assert access is not None and access.owner == "dev" and access.grants == []
        _, total = await store.list_workflows(None, 1, 10, frozenset({"user:dev"}))
        assert total == 1
        await store.update_workflow(loaded.model_copy(update={"name": "renamed"}), False)
        assert (await store.get_workflow(record.id)) == loaded.model_copy(
            update={"name": "renamed"}
        )
    finally:
        await store.close()


async def test_workflows_folded_before_accents_were_are_found_by_plain_letters(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    record = workflow("İstanbul")
    await store.create_workflow(record)
    await store.close()
    with sqlite3.connect(db_path) as db:  # as the schema before refold_search_text kept it
        db.execute("UPDATE workflows SET name_fold = ?", ("İstanbul".casefold(),))
        db.execute(f"PRAGMA user_version = {BEFORE_REFOLD}")
    store = SqliteStore(db_path)
    await store.connect()
    try:
        items, _ = await store.list_workflows("istanbul", 1, 10)
        assert [r.id for r in items] == [record.id]
    finally:
        await store.close()


async def test_payloads_from_before_run_references_are_kept_for_good(db_path: Path) -> None:
    # Stored when no record said which runs use a payload: any run may, so none goes.
    store = SqliteStore(db_path)
    await store.connect()
    wf = workflow()
    await store.create_workflow(wf)
    old = run(wf.id, status="completed", started_at=at(0), finished_at=at(10))
    await store.insert_run(old)
    await store.put_payload("old", b"o" * 300_000, old.id)
    await store.close()
    with sqlite3.connect(db_path) as db:  # as the file was before references
        db.execute("DROP TABLE payload_refs")
        db.execute(f"PRAGMA user_version = {BEFORE_PAYLOAD_REFS}")
    store = SqliteStore(db_path)
    await store.connect()
    try:
        new = run(wf.id, status="completed", started_at=at(0), finished_at=at(10))
        await store.insert_run(new)
        await store.put_payload("old", b"o" * 300_000, new.id)
        await store.put_payload("new", b"n" * 300_000, new.id)
        batch = await store.delete_ended_runs(at(100), 500)
        assert (batch.deleted, batch.payloads) == (2, 1)
        assert await store.get_payload("old") == b"o" * 300_000
        assert await store.get_payload("new") is None
    finally:
        await store.close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_a_migration_says_once_from_which_version_and_old_references_are_runs(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "trellis.store")
    store = SqliteStore(db_path)
    await store.connect()
    await store.put_payload("old", b"o", "run-old")
    await store.close()
    with sqlite3.connect(db_path) as db:  # as the file was before what refers was recorded
        db.execute("DROP INDEX payload_refs_firing_made")
        db.execute("ALTER TABLE payload_refs DROP COLUMN holder")
        db.execute("ALTER TABLE payload_refs DROP COLUMN made_at")
        db.execute(f"PRAGMA user_version = {BEFORE_REF_HOLDERS}")
    store = SqliteStore(db_path)
    await store.connect()
    try:
        await store.put_payload("new", b"n", "sched-a-run-1", PayloadHolder.FIRING)
        swept = await store.delete_firing_payloads(datetime.now(UTC) + timedelta(hours=1), 500)
        assert (swept.refs, swept.payloads) == (1, 1)
        assert await store.get_payload("old") == b"o"
    finally:
        await store.close()
    store = SqliteStore(db_path)
    await store.connect()  # at this code's version: nothing to say
    await store.close()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "trellis.store"]
    # A new file is no news; a migrated one is (an older release refuses it from now on).
    assert said == [
        ("DEBUG", f"store schema created at version {SCHEMA_VERSION}"),
        ("INFO", f"store schema migrated from version {BEFORE_REF_HOLDERS} to {SCHEMA_VERSION}"),
    ]


async def test_firings_references_from_before_their_holder_are_swept_and_runs_kept(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    wf = workflow()
    await store.create_workflow(wf)
    ended = run(wf.id, status="completed", started_at=at(0), finished_at=at(10))
    await store.insert_run(ended)
    await store.close()
    firing = "sched-a-run-2026-11-30T22:42:55Z"
    with sqlite3.connect(db_path) as db:  # as the file was, and its worker wrote each put
        db.execute("DROP INDEX payload_refs_firing_made")
        db.execute("ALTER TABLE payload_refs DROP COLUMN holder")
        db.execute("ALTER TABLE payload_refs DROP COLUMN made_at")
        db.execute(f"PRAGMA user_version = {BEFORE_REF_HOLDERS}")
        for key, data, workflow_id in (
            ("request", b"r", firing),
            ("input", b"i", firing),
            ("input", b"i", ended.id),
            ("argument", b"a", "sched-a-run"),
        ):
            db.execute("INSERT OR IGNORE INTO payloads (key, data) VALUES (?, ?)", (key, data))
            db.execute("INSERT INTO payload_refs (key, run_id) VALUES (?, ?)", (key, workflow_id))
    store = SqliteStore(db_path)
    await store.connect()
    try:
        assert await store.adopt_older_firing_refs(500) == 2
        swept = await store.delete_firing_payloads(datetime.now(UTC) + timedelta(hours=1), 500)
        assert (swept.refs, swept.payloads) == (2, 1)
        assert await store.get_payload("request") is None
        assert await store.get_payload("input") == b"i"
        assert await store.get_payload("argument") == b"a"
        assert (await store.delete_ended_runs(at(100), 500)).payloads == 1
    finally:
        await store.close()


async def test_runs_from_before_the_schedule_column_name_no_schedule_and_new_ones_do(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    wf = new_id()
    old = run(wf, started_at=at(1))
    await store.insert_run(old)
    await store.close()
    with sqlite3.connect(db_path) as db:  # as the file was before the column
        db.execute("DROP INDEX runs_schedule_started_id")
        db.execute("ALTER TABLE runs DROP COLUMN schedule_id")
        db.execute(f"PRAGMA user_version = {BEFORE_SCHEDULE_COLUMN}")
    store = SqliteStore(db_path)
    await store.connect()
    try:
        scheduled = run(wf, schedule_id="sched-a", started_at=at(2))
        await store.insert_run(scheduled)
        items, total = await store.list_runs(wf, schedule_id="sched-a")
        assert ([r.id for r in items], total) == ([scheduled.id], 1)
        everything, total = await store.list_runs(wf)
        assert ([r.id for r in everything], total) == ([scheduled.id, old.id], 2)
    finally:
        await store.close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE workflow_definition_id = ?"
            " AND schedule_id = ? ORDER BY started_at DESC, id DESC",
            (wf, "sched-a"),
        ).fetchall()
        assert any("runs_schedule_started_id" in str(row) for row in plan), plan


async def test_runs_from_before_the_change_counters_count_from_their_next_write(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    record = workflow()
    await store.create_workflow(record)
    stored = await store.insert_run(run(record.id))
    await store.close()
    _take_back(db_path, BEFORE_CHANGE_COUNTERS, _undo_change_counters)
    store = SqliteStore(db_path)
    await store.connect()
    try:
        assert await store.run_changes(stored.id) == 0
        assert await store.workflow_run_changes(record.id) == 0
        await store.upsert_node_run(node_run(stored.id, rev=1))
        assert await store.run_changes(stored.id) == 1
        assert await store.workflow_run_changes(record.id) == 1
    finally:
        await store.close()


async def test_events_from_before_event_keys_stay_and_keys_apply_from_then(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    first = await store.append_event("r1", {"type": "node_started"})
    await store.close()
    _take_back(db_path, BEFORE_EVENT_KEYS, _undo_event_keys)
    store = SqliteStore(db_path)
    await store.connect()
    try:
        again = await store.append_event("r1", {"type": "node_started"}, key="x:1:ab")
        assert again > first
        assert await store.append_event("r1", {"type": "node_started"}, key="x:1:ab") == again
        assert [e["id"] for e in await store.list_events("r1", 0, 10)] == [first, again]
    finally:
        await store.close()


async def test_a_workflows_access_is_kept_beside_it_from_the_migration_on(db_path: Path) -> None:
    # A file from before the stored access, holding a workflow shared with one role.
    store = SqliteStore(db_path)
    await store.connect()
    shared = Grant.model_validate({"principal": "role:ops", "permissions": ["EDIT"]})
    record = workflow(owner="alice", grants=[shared])
    await store.create_workflow(record)
    await store.close()
    _take_back(db_path, BEFORE_STORED_ACCESS, _undo_stored_access)
    store = SqliteStore(db_path)
    await store.connect()
    try:
        expected = WorkflowAccess(id=record.id, owner="alice", grants=[shared])
        assert await store.get_workflow_access(record.id) == expected
        # Kept from then on by every write: a new workflow, grants, a saved definition.
        other = workflow(owner="bob")
        await store.create_workflow(other)
        assert await store.get_workflow_access(other.id) == WorkflowAccess(id=other.id, owner="bob")
        await store.set_workflow_grants(record.id, [])
        await store.update_workflow(record.model_copy(update={"name": "renamed"}), True)
        assert await store.get_workflow_access(record.id) == WorkflowAccess(
            id=record.id, owner="alice"
        )
    finally:
        await store.close()
    with sqlite3.connect(db_path) as db:
        # Read from its column, not from the document.
        db.execute(
            "UPDATE workflows SET access = json_object('id', id, 'owner', 'mallory',"
            " 'grants', json('[]')) WHERE id = ?",
            (other.id,),
        )
    store = SqliteStore(db_path)
    await store.connect()
    try:
        access = await store.get_workflow_access(other.id)
        assert access == WorkflowAccess(id=other.id, owner="mallory")
    finally:
        await store.close()


async def test_reads_do_not_wait_for_another_connections_open_write(db_path: Path) -> None:
    # WAL: a read sees the last commit while another connection holds the write lock, so
    # reads on the event loop's thread never block it on a writer.
    store = SqliteStore(db_path, busy_timeout_ms=10_000)
    await store.connect()
    record = workflow()
    await store.create_workflow(record)
    writer = sqlite3.connect(db_path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE workflows SET name = 'uncommitted' WHERE id = ?", (record.id,))
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await store.get_workflow(record.id) == record
        items, _ = await store.list_runs(None)
        assert items == [] and loop.time() - began < 1.0
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        await store.close()


async def test_a_closed_store_refuses_reads(db_path: Path) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    with pytest.raises(StoreError, match="not connected"):
        await store.get_run("run-1")


async def test_records_nested_deeper_than_pydantics_json_parser_read_back(db_path: Path) -> None:
    # A step's output may nest deep (a loop that wraps the previous output each time).
    # pydantic writes up to 255 levels but its JSON parser stops at 200: such a run could
    # not be read, its detail answered 500, and the reconciler's read of runs failed,
    # which stopped every reconciler pass.
    deep: object = 1
    for _ in range(240):
        deep = [deep]
    store = SqliteStore(db_path)
    await store.connect()
    try:
        record = run(new_id(), status="pending", started_at=at(1), final_output={"deep": deep})
        await store.insert_run(record)
        assert await store.get_run(record.id) == record
        assert [r.id for r in await store.list_unstarted_runs(at(5))] == [record.id]
        step = node_run(record.id, output_snapshot=deep)
        await store.upsert_node_run(step)
        assert await store.get_node_run(step.id) == step
    finally:
        await store.close()


async def test_a_workflows_runs_in_one_status_are_read_by_an_index_in_order(
    db_path: Path,
) -> None:
    # A status filter walked every run in that status, of every workflow (117 ms at
    # 100,000 runs), and every page of runs was sorted afresh by (started_at, id).
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    lists = {
        "SELECT COUNT(*) FROM runs WHERE workflow_definition_id = ? AND status = ?": 2,
        "SELECT id FROM runs WHERE workflow_definition_id = ? AND status = ?"
        " ORDER BY started_at DESC, id DESC LIMIT 20 OFFSET 4000": 2,
        "SELECT id FROM runs WHERE workflow_definition_id = ?"
        " ORDER BY started_at DESC, id DESC LIMIT 20 OFFSET 4000": 1,
        "SELECT id FROM runs WHERE status = 'pending' AND started_at < ?"
        " ORDER BY started_at, id": 1,
        "SELECT id FROM runs WHERE parent_run_id = ? ORDER BY started_at DESC, id DESC": 1,
        "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 20": 0,
    }
    with sqlite3.connect(db_path) as db:
        for query, params in lists.items():
            plan = " | ".join(
                r[3] for r in db.execute(f"EXPLAIN QUERY PLAN {query}", ("x",) * params)
            )
            # A scan is in order of an index (the newest page), never of the table.
            assert "TEMP B-TREE" not in plan and "INDEX" in plan, (query, plan)
        assert "runs_workflow_status_started_id" in " ".join(
            r[3] for r in db.execute(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM runs"
                " WHERE workflow_definition_id = ? AND status = ?", ("w", "failed"))
        )  # fmt: skip


async def test_indexes_change_without_the_schema_version_so_a_rollback_opens_the_file(
    db_path: Path,
) -> None:
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    # An older release's indexes (before `id` joined them), at the same schema version.
    with sqlite3.connect(db_path) as db:
        for name in ("runs_workflow_started_id", "runs_status_started_id"):
            db.execute(f"DROP INDEX {name}")
        db.execute(
            "CREATE INDEX runs_workflow_started ON runs (workflow_definition_id, started_at)"
        )
        db.execute("CREATE INDEX runs_status_started ON runs (status, started_at)")
    store = SqliteStore(db_path)
    await store.connect()
    await store.close()
    with sqlite3.connect(db_path) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {"runs_workflow_started_id", "runs_status_started_id"} <= names
    assert not names & {"runs_workflow_started", "runs_status_started"}


async def test_deleting_a_workflow_lets_other_writes_in_between_its_batches_of_runs(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One transaction held every writer (each step of each run) for the whole delete:
    # 12 s for a workflow of 42,000 runs.
    monkeypatch.setattr("activities.store.sqlite.DELETE_BATCH_RUNS", 2)
    store = SqliteStore(db_path)
    await store.connect()
    try:
        doomed, other = workflow(), workflow()
        await store.create_workflow(doomed)
        await store.create_workflow(other)
        runs = [run(doomed.id, started_at=at(i)) for i in range(41)]
        for r in runs:
            await store.insert_run(r)
            await store.upsert_node_run(node_run(r.id))
            await store.append_event(r.id, {"type": "run_started"})
        deleting = asyncio.create_task(store.delete_workflow(doomed.id))
        await asyncio.sleep(0)  # it has begun its first batch
        late = run(other.id)
        await store.insert_run(late)
        assert not deleting.done()  # the write went in between two batches
        assert await deleting is True
        assert await store.get_workflow(doomed.id) is None
        assert all([await store.get_run(r.id) is None for r in runs])
        assert await store.list_node_runs([r.id for r in runs]) == []
        assert await store.list_events(runs[0].id, 0, 10) == []
        assert await store.get_run(late.id) is not None
        assert await store.delete_workflow(doomed.id) is False
    finally:
        await store.close()


async def test_the_inbox_reads_every_versions_approvers_when_its_cache_starts_again(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache of approvers by version started again in the middle of a read: the
    # versions read before then lost theirs, and their gates showed no approvers.
    monkeypatch.setattr("activities.store.sqlite_gates.VERSIONS_KEPT", 2)
    store = SqliteStore(db_path)
    await store.connect()
    try:
        gate = [{"stepId": "s1", "kind": "confirmation"}]
        for version in (1, 2, 3):
            review = HumanReview(requires_confirmation=True, approvers=[f"user:v{version}"])
            step = WorkflowNode(
                id="s1", name="Send", node_type="step", executor_key="echo", human_review=review
            )
            await store.insert_run(
                run("wf", status="awaiting_approval", started_at=at(version),
                    workflow_version=version, pending_requirements=gate,
                    definition_snapshot=WorkflowSpec(name="Send", nodes=[step]))
            )  # fmt: skip
        first = await store.list_gated_runs("awaiting_approval", 2)
        assert [r.approvers_of("s1") for r in first] == [["user:v1"], ["user:v2"]]
        every = await store.list_gated_runs("awaiting_approval", 10)
        assert [r.approvers_of("s1") for r in every] == [["user:v1"], ["user:v2"], ["user:v3"]]
    finally:
        await store.close()
