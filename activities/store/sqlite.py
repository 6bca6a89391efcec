"""The embedded default store: one SQLite file (WAL), safe for an API and a worker process at once.

Each table keeps the record's full document as JSON plus the indexed columns its queries use.
Writes run in `BEGIN IMMEDIATE` transactions: the write lock is taken up front, so a second
process waits (busy_timeout) instead of failing a read-to-write upgrade with "database is locked".
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from pydantic import ValidationError

from activities.store import sqlite_a2a_tasks, sqlite_fires, sqlite_payloads
from activities.store.access import LEGACY_OWNER, Grant, WorkflowAccess, viewer_principals
from activities.store.base import (
    ChangedMeanwhile,
    DuplicateNameError,
    PayloadHolder,
    StoreError,
    StoreSchemaTooNew,
    StoreUnavailable,
    Viewer,
)
from activities.store.documents import (
    event_document,
    event_keys_for,
    from_stored,
    iso_utc,
    merged_node_run,
    start_missed,
    stored_run_changes,
)
from activities.store.executions import (
    RUN_END_FIELDS,
    node_run_base,
    taken_over,
    verdict,
)
from activities.store.records import (
    A2ATaskRef,
    AbandonedA2ATask,
    EndedRunsDeleted,
    FiringRefsDeleted,
    GatedRun,
    NodeRunRecord,
    RunHeader,
    RunRecord,
    StoredModel,
    VersionSummary,
    WorkflowRecord,
    WorkflowVersionRecord,
    stored_node_count,
)
from activities.store.search_text import search_fold
from activities.store.sqlite_gates import GateReader, gated_runs_query
from activities.store.sqlite_reader import SqliteReader
from activities.store.sqlite_rows import (
    NODE_RUN_COLUMNS,
    RUN_COLUMNS,
    WORKFLOW_COLUMNS,
    marks,
    marks_for,
    node_run_row,
    run_row,
    to_json,
    version_row,
    workflow_row,
)
from activities.store.sqlite_schema import migrate
from temporal_workflows.contracts import Identity
from temporal_workflows.read_model import (
    START_CLAIM_REV,
    TERMINAL_RUN_STATUSES,
    WORKFLOW_REVS_BELOW,
)

T = TypeVar("T")
M = TypeVar("M", bound=StoredModel)
# How often the live feed looks for new events (watch_event_runs).
TAIL_SECONDS = 0.005
TAIL_PAGE = 1000
# The size the write-ahead log is cut back to once a checkpoint has copied it into the
# file: a sweep deleting thousands of runs grows it by what it deleted (~60 MB seen), and
# without a limit SQLite keeps that size, reused, until every process closes the file.
# 32 MiB holds any everyday burst of writes without cutting and growing it again.
WAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024


# Node runs by start, unstarted last. No index gives this order, so the ids are ordered
# first and the documents read in that order after: sorting the documents read them all
# (600 of 1 MB: 2.5 s and 430 MB before the first came back), whatever a limit said.
NODE_RUN_ORDER = " ORDER BY started_at IS NULL, started_at, id"


class SqliteStore:
    """`Store` on an aiosqlite connection; one connection per process, serialised by a lock."""

    ids_visible_in_order = True

    def __init__(self, path: Path, busy_timeout_ms: int = 30_000) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._db: aiosqlite.Connection | None = None
        # The open file's device and inode: ping checks the path still names it.
        self._file: tuple[int, int] | None = None
        self._reader: SqliteReader | None = None
        # Workflow versions' approvers, read once each (sqlite_gates.py).
        self._gates = GateReader()
        # One connection is shared by concurrent requests: the lock keeps one coroutine's
        # statements from landing inside another's open transaction.
        self._lock = asyncio.Lock()
        # Writes waiting for the next group commit, and the task committing them.
        self._pending: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------
    async def connect(self) -> None:
        """Open the file, switch to WAL and create or migrate the schema."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(_can_open, self.path)
            self._file = _file_identity(self.path)
            self._db = await aiosqlite.connect(
                self.path, isolation_level=None, timeout=self._busy_timeout_ms / 1000
            )
            await self._db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            await self._enable_wal(self._db)
            # WAL + NORMAL: safe across process crashes; a power cut can lose only the last commits.
            await self._db.execute("PRAGMA synchronous = NORMAL")
            await self._db.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
            async with self._write() as db:
                await migrate(db)
            self._reader = SqliteReader(self.path)
        except StoreSchemaTooNew:
            # The file opened: its schema, not the file, is what this code cannot use.
            await self.close()
            raise
        except (sqlite3.Error, OSError, StoreError) as exc:
            await self.close()
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc

    async def _enable_wal(self, db: aiosqlite.Connection) -> None:
        """Switch the file to WAL, waiting while another process holds it (first start)."""
        # Changing the journal mode does not wait on the busy handler: when an API and a
        # worker open a fresh file at once, one of them sees "database is locked" at once.
        deadline = asyncio.get_running_loop().time() + self._busy_timeout_ms / 1000
        while True:
            try:
                async with db.execute("PRAGMA journal_mode = WAL") as cursor:
                    row = await cursor.fetchone()
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.02)
        if row is None or str(row[0]).lower() != "wal":
            raise StoreError(f"SQLite did not switch {self.path} to WAL mode")

    async def close(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def ping(self) -> None:
        async with self._read() as db:
            await db.execute("SELECT 1")
        # A file removed or replaced under an open store is still read and written by it
        # (its old inode): nothing fails, and what is written meanwhile is gone at the next
        # start. Readiness says so instead.
        try:
            now = _file_identity(self.path)
        except FileNotFoundError:
            now = None
        if now != self._file:
            how = "removed" if now is None else "replaced"
            raise StoreError(
                f"SQLite store {self.path} was {how} while open: what is written now is lost;"
                " restart to open the file that is there"
            )

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[SqliteReader]:
        if self._reader is None:
            raise StoreError("SQLite store is not connected")
        try:
            yield self._reader
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            db = self._conn()
            try:
                await db.execute("BEGIN IMMEDIATE")
                yield db
                await db.execute("COMMIT")
            except BaseException as exc:
                # Statements run in order on aiosqlite's thread, so this rollback lands after
                # whatever a cancelled await left queued (even a BEGIN): no transaction outlives
                # the lock. rollback() is a no-op when none is open.
                await asyncio.shield(db.rollback())
                if isinstance(exc, sqlite3.IntegrityError) and "workflows.name" in str(exc):
                    raise DuplicateNameError("a workflow with this name already exists") from exc
                if isinstance(exc, sqlite3.Error):
                    raise _store_error(exc) from exc
                raise

    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError("SQLite store is not connected")
        return self._db

    # -- definitions ---------------------------------------------------------
    async def create_workflow(self, record: WorkflowRecord) -> None:
        async with self._write() as db:
            await db.execute(
                f"INSERT INTO workflows ({WORKFLOW_COLUMNS})"
                f" VALUES ({marks_for(WORKFLOW_COLUMNS)})",
                workflow_row(record),
            )
            await _put_version(db, record)
            await _put_viewers(db, record.id, viewer_principals(record.owner, record.grants))

    async def get_workflow(self, workflow_id: str) -> WorkflowRecord | None:
        async with self._read() as db:
            row = await _one(db, "SELECT doc FROM workflows WHERE id = ?", (workflow_id,))
        return None if row is None else _load(WorkflowRecord, row[0])

    async def get_workflow_access(self, workflow_id: str) -> WorkflowAccess | None:
        async with self._read() as db:
            # Kept by triggers from the document (sqlite_schema.py, migration 6).
            row = await _one(db, "SELECT access FROM workflows WHERE id = ?", (workflow_id,))
        return None if row is None else WorkflowAccess.model_validate_json(row[0])

    async def list_workflows(
        self, query: str | None, page: int, per_page: int, viewer: Viewer = None
    ) -> tuple[list[WorkflowRecord], int]:
        clauses: list[str] = []
        params: tuple[str, ...] = ()
        if query:
            # instr, not LIKE: a LIKE pattern ends at a NUL (the rest matched everything).
            folded = search_fold(query)
            clauses.append("(instr(name_fold, ?) > 0 OR instr(description_fold, ?) > 0)")
            params = (folded, folded)
        if viewer is not None:
            clauses.append(_visible("id", viewer))
            params = (*params, *sorted(viewer))
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        async with self._read() as db:
            total = await _one(db, "SELECT COUNT(*) FROM workflows" + where, params)
            rows = await db.execute_fetchall(
                "SELECT doc FROM workflows" + where + " ORDER BY updated_at DESC, id DESC"
                " LIMIT ? OFFSET ?",
                (*params, per_page, (page - 1) * per_page),
            )
        items = [_load(WorkflowRecord, r[0]) for r in rows]
        return items, total[0] if total else 0

    async def update_workflow(
        self, record: WorkflowRecord, new_version: bool, *, read: WorkflowRecord | None = None
    ) -> None:
        where, args = "id = ?", list[Any]([record.id])
        if read is not None:
            # Compared and written in one statement, inside the write transaction.
            where += (
                " AND updated_at = ? AND json_extract(doc, '$.version') = ?"
                " AND json_extract(doc, '$.enabled') = ?"
            )
            args += [workflow_row(read)[4], read.version, int(read.enabled)]
        async with self._write() as db:
            # The stored owner and grants stay: only set_workflow_grants changes them.
            cursor = await db.execute(
                "UPDATE workflows SET id = ?, name = ?, name_fold = ?, description_fold = ?,"
                " updated_at = ?, doc = json_set(?,"
                " '$.owner', COALESCE(json_extract(doc, '$.owner'), ?),"
                f" '$.grants', json(COALESCE(json_extract(doc, '$.grants'), '[]'))) WHERE {where}",
                (*workflow_row(record), LEGACY_OWNER, *args),
            )
            if not cursor.rowcount and read is not None:
                raise ChangedMeanwhile(f"workflow {record.id} changed since it was read")
            if cursor.rowcount and new_version:
                await _put_version(db, record)

    async def set_workflow_grants(
        self, workflow_id: str, grants: list[Grant], *, read: list[Grant] | None = None
    ) -> bool:
        stored = to_json({"grants": [g.model_dump(mode="json", by_alias=False) for g in grants]})
        async with self._write() as db:  # one transaction: the check and the write
            row = await _one(
                db,
                "SELECT COALESCE(json_extract(doc, '$.owner'), ?),"
                " COALESCE(json_extract(doc, '$.grants'), '[]') FROM workflows WHERE id = ?",
                (LEGACY_OWNER, workflow_id),
            )
            if row is None:
                return False
            if read is not None and _grants(row[1]) != read:
                raise ChangedMeanwhile(f"the grants of workflow {workflow_id} changed")
            await db.execute(
                "UPDATE workflows SET doc = json_set(doc, '$.owner', ?,"
                " '$.grants', json_extract(?, '$.grants')) WHERE id = ?",
                (row[0], stored, workflow_id),
            )
            await _put_viewers(db, workflow_id, viewer_principals(row[0], grants))
        return True

    async def delete_workflow(self, workflow_id: str) -> bool:
        # Runs go a batch per transaction, each with its node runs and events: every other
        # write (each step of each run) waits for one batch, not for the whole workflow (a
        # workflow of 42,000 runs held them 12 s). The workflow goes last, with the runs
        # left, so a delete cut short leaves it there, fewer runs, for the next to finish.
        while True:
            async with self._write() as db:
                rows = await db.execute_fetchall(
                    "SELECT id FROM runs WHERE workflow_definition_id = ? LIMIT ?",
                    (workflow_id, DELETE_BATCH_RUNS),
                )
                ids = [row[0] for row in rows]
                await _delete_runs(db, ids, hand_over=True)
                if len(ids) == DELETE_BATCH_RUNS:
                    continue
                for table, column in _WORKFLOW_ROWS:
                    await db.execute(f"DELETE FROM {table} WHERE {column} = ?", (workflow_id,))
                cursor = await db.execute("DELETE FROM workflows WHERE id = ?", (workflow_id,))
                return cursor.rowcount > 0

    async def delete_ended_runs(self, ended_before: datetime, limit: int) -> EndedRunsDeleted:
        # Found and deleted in one write transaction: a sweep racing it waits, then finds
        # none of them. The run_changes counters stay, as after a workflow's delete.
        cutoff = iso_utc(ended_before)
        async with self._write() as db:
            rows = list(await db.execute_fetchall(_ENDED_RUNS, (*_TERMINAL, cutoff, cutoff, limit)))
            ids = await _within_rows(db, [row[0] for row in rows], DELETE_ROWS)
            payloads = await _delete_runs(db, ids)
        oldest = min((str(row[1]) for row in rows[: len(ids)]), default=None)
        return EndedRunsDeleted(
            len(rows),
            len(ids),
            None if oldest is None else datetime.fromisoformat(oldest),
            more=len(ids) < len(rows) or len(rows) == limit,
            payloads=payloads,
        )

    async def get_workflow_version(
        self, workflow_id: str, version: int
    ) -> WorkflowVersionRecord | None:
        async with self._read() as db:
            row = await _one(
                db,
                "SELECT doc FROM workflow_versions WHERE workflow_id = ? AND version = ?",
                (workflow_id, version),
            )
        return None if row is None else _load(WorkflowVersionRecord, row[0])

    async def list_workflow_versions(self, workflow_id: str) -> list[VersionSummary]:
        # One json_extract of five paths: one parse of each document (SQLite parses it
        # again for each JSON function), and no definition validated.
        async with self._read() as db:
            rows = await db.execute_fetchall(
                "SELECT version, json_extract(doc, '$.created_at', '$.definition.name',"
                " '$.definition.description', '$.definition.nodes', '$.created_by')"
                " FROM workflow_versions WHERE workflow_id = ? ORDER BY version",
                (workflow_id,),
            )
        return [_version_summary(version, json.loads(fields)) for version, fields in rows]

    # -- runs ----------------------------------------------------------------
    async def insert_run(self, record: RunRecord) -> RunRecord:
        row = run_row(record)

        def op(conn: sqlite3.Connection) -> str | None:
            sql = f"INSERT OR IGNORE INTO runs ({RUN_COLUMNS}) VALUES ({marks_for(RUN_COLUMNS)})"
            if conn.execute(sql, row).rowcount == 1:
                return None
            return str(
                conn.execute("SELECT doc FROM runs WHERE id = ?", (record.id,)).fetchone()[0]
            )

        existing = await self._tx(op)
        # Inserted: what is stored is this record's document, which reads back equal.
        return record if existing is None else _load(RunRecord, existing)

    async def delete_unstarted_run(self, run_id: str) -> bool:
        async with self._write() as db:
            rows = await db.execute_fetchall(
                "SELECT id FROM runs WHERE id = ? AND status = 'pending' AND rev <= ?",
                (run_id, START_CLAIM_REV),
            )
            ids = [row[0] for row in rows]
            await _delete_runs(db, ids)
        return bool(ids)

    async def update_run(
        self,
        run_id: str,
        rev: int,
        changes: dict[str, Any],
        event: dict[str, Any] | None = None,
        *,
        newer_only: bool = False,
        event_key: str | None = None,
        ending: bool = False,
    ) -> bool:
        # Validated here, written into the stored document by SQLite's json_set: the run
        # (its definition snapshot the largest part) is neither parsed nor re-serialised.
        stored = stored_run_changes(changes)
        overrides = ending and "status" in changes and changes.get("end_order") is not None
        columns = [column for column in _CHANGEABLE_RUN_COLUMNS if column in stored]
        paths = "".join(", ?, json(?)" for _ in stored)
        sql = (
            f"UPDATE runs SET doc = json_set(doc, '$.rev', ?{paths}), rev = ?"
            + "".join(f", {column} = ?" for column in columns)
            + " WHERE id = ? AND (rev < ? OR (rev = ? AND NOT ?)"
            + " OR (? AND status != ? AND rev < ?))"
            # An end never lands over one a later workflow task wrote.
            + " AND (? IS NULL OR COALESCE(json_extract(doc, '$.end_order'), -1) <= ?)"
        )
        params = (
            rev,
            *(part for name, value in stored.items() for part in (f"$.{name}", _json(value))),
            rev,
            *(stored[column] for column in columns),
            run_id, rev, rev, newer_only, overrides, changes.get("status"), WORKFLOW_REVS_BELOW,
            changes.get("end_order"), changes.get("end_order"),
        )  # fmt: skip

        writer = changes.get("execution")

        def op(conn: sqlite3.Connection) -> bool:
            held = None if writer is None else _run_executions(conn, run_id)
            told = "revs" if held is None or writer is None else verdict(held, writer)
            if told == "stale":
                return False  # a late write of an execution the run has gone on from
            if told == "takeover":
                assert held is not None and writer is not None
                taking = {name: None for name in RUN_END_FIELDS} | stored
                _take_over_run(conn, run_id, rev, taking | taken_over(held, writer), columns)
            elif conn.execute(sql, params).rowcount == 0:
                return False  # no such run, or a newer revision is stored
            if event is not None:
                _insert_event(conn, run_id, event, event_key)
            return True

        return await self._batched(op)

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._read() as db:
            row = await _one(db, "SELECT doc FROM runs WHERE id = ?", (run_id,))
        return None if row is None else _load(RunRecord, row[0])

    async def list_runs(
        self,
        workflow_id: str | None,
        *,
        status: str | None = None,
        parent_run_id: str | None = None,
        schedule_id: str | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> tuple[list[RunHeader], int]:
        filters = {
            "workflow_definition_id": workflow_id,
            "status": status,
            "parent_run_id": parent_run_id,
            "schedule_id": schedule_id,
        }
        clauses = [f"{column} = ?" for column, value in filters.items() if value is not None]
        params = tuple(value for value in filters.values() if value is not None)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        async with self._read() as db:
            total = await _one(db, "SELECT COUNT(*) FROM runs" + where, params)
            rows = await db.execute_fetchall(
                "SELECT json_remove(doc, '$.definition_snapshot') FROM runs"
                + where
                + " ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?",
                (*params, per_page, (page - 1) * per_page),
            )
        return [_load(RunHeader, r[0]) for r in rows], total[0] if total else 0

    async def list_unstarted_runs(self, started_before: datetime) -> list[RunRecord]:
        async with self._read() as db:
            rows = await db.execute_fetchall(
                "SELECT doc FROM runs WHERE status = 'pending' AND started_at < ?"
                " ORDER BY started_at, id",
                (iso_utc(started_before),),
            )
        return _runs(rows)

    async def list_gated_runs(
        self, status: str, limit: int, viewer: Viewer = None
    ) -> list[GatedRun]:
        visible = "" if viewer is None else " AND " + _visible("workflow_definition_id", viewer)
        async with self._read() as db:
            rows = await db.execute_fetchall(
                gated_runs_query(visible), (status, *sorted(viewer or ()), limit)
            )
            return await self._gates.gated_runs(db, rows)

    # -- node runs -----------------------------------------------------------
    async def upsert_node_run(self, record: NodeRunRecord) -> bool:
        row = node_run_row(record)

        def op(conn: sqlite3.Connection) -> bool:
            # One statement: the rev comparison and the write cannot be split by another writer.
            return conn.execute(_UPSERT_NODE_RUN, row).rowcount > 0

        return await self._tx(op)

    async def merge_node_run(
        self,
        fields: dict[str, Any],
        events: Sequence[dict[str, Any]] = (),
        event_keys: Sequence[str | None] = (),
    ) -> bool:
        keys = event_keys_for(events, event_keys)

        def op(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT doc FROM node_runs WHERE id = ?", (fields["id"],)).fetchone()
            stored = json.loads(row[0]) if row else None
            writer = fields.get("execution")
            told = verdict(stored, writer)
            if told == "stale":
                return False  # a late write of an execution the run has gone on from
            if told == "takeover":
                assert stored is not None and writer is not None
                merged = merged_node_run(node_run_base(stored), fields)
                merged |= taken_over(stored, writer)
            else:
                merged = merged_node_run(stored, fields)
            record = from_stored(NodeRunRecord, merged)
            # A node run new to the store needs its run there: one deleted with its
            # workflow (its node runs too) takes no late writes of its steps.
            if row is None and not _run_exists(conn, record.workflow_run_id):
                return False
            upsert = _REPLACE_NODE_RUN if told == "takeover" else _UPSERT_NODE_RUN
            if conn.execute(upsert, node_run_row(record)).rowcount == 0:
                _fill_missed_start(conn, stored, fields)
                return False
            for event, key in zip(events, keys, strict=True):
                _insert_event(conn, record.workflow_run_id, event, key)
            return True

        return await self._batched(op)

    async def _batched(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run `op` in a transaction shared with the writes queued meanwhile (group commit).

        Concurrent steps (parallel blocks, many runs) then pay one BEGIN/COMMIT together
        instead of queueing one transaction each on the lock.
        """
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((op, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        result: T = await asyncio.shield(future)
        return result

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                outcomes = await self._in_thread(run_batch, [op for op, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    _settle(future, error=_store_error(exc))
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
                if ok:
                    _settle(future, result=value)
                else:
                    _settle(future, error=_store_error(value))

    async def _tx(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run `op` in one write transaction (BEGIN IMMEDIATE … COMMIT)."""
        try:
            result: T = await self._in_thread(run_transaction, op)
        except Exception as exc:
            raise _store_error(exc) from exc
        return result

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Call `fn(sqlite3_connection, *args)` on the connection's thread: one trip in all.

        A transaction made of several awaited statements costs one thread hop each, under
        the lock; run whole, it costs one. (aiosqlite's `_execute` and `_conn` are its
        own way of running a call on that thread; no public API does this.)
        """
        async with self._lock:
            db = self._conn()
            result: T = await db._execute(fn, db._conn, *args)  # type: ignore[no-untyped-call]
        return result

    async def list_node_runs(
        self, run_ids: list[str], max_bytes: int | None = None
    ) -> list[NodeRunRecord]:
        if not run_ids:
            return []
        async with self._read() as db:
            ordered = await db.execute_fetchall(
                f"SELECT id FROM node_runs WHERE workflow_run_id IN ({marks(len(run_ids))})"
                f"{NODE_RUN_ORDER}",
                tuple(run_ids),
            )
            docs = await db.documents_by_id("node_runs", [row[0] for row in ordered], max_bytes)
        return [_load(NodeRunRecord, doc) for doc in docs]

    async def node_run_page(
        self, run_id: str, offset: int, limit: int, max_bytes: int | None = None
    ) -> tuple[list[NodeRunRecord], int]:
        async with self._read() as db:
            counted = await _one(
                db, "SELECT COUNT(*) FROM node_runs WHERE workflow_run_id = ?", (run_id,)
            )
            ordered = await db.execute_fetchall(
                f"SELECT id FROM node_runs WHERE workflow_run_id = ?{NODE_RUN_ORDER}"
                " LIMIT ? OFFSET ?",
                (run_id, limit, offset),
            )
            docs = await db.documents_by_id("node_runs", [row[0] for row in ordered], max_bytes)
        return [_load(NodeRunRecord, doc) for doc in docs], int(counted[0])

    async def node_run_counts_of(self, run_ids: list[str]) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {run_id: {} for run_id in run_ids}
        if not run_ids:
            return counts
        async with self._read() as db:
            rows = await db.execute_fetchall(
                "SELECT workflow_run_id, json_extract(doc, '$.status'), COUNT(*) FROM node_runs"
                f" WHERE workflow_run_id IN ({marks(len(run_ids))}) GROUP BY 1, 2",
                run_ids,
            )
        for run_id, status, count in rows:
            counts[run_id][str(status)] = int(count)
        return counts

    async def get_node_run(self, node_run_id: str) -> NodeRunRecord | None:
        async with self._read() as db:
            row = await _one(db, "SELECT doc FROM node_runs WHERE id = ?", (node_run_id,))
        return None if row is None else _load(NodeRunRecord, row[0])

    # -- change counters (kept by triggers: sqlite_schema.py) -----------------
    async def run_changes(self, run_id: str) -> int | None:
        return await self._counter("SELECT n FROM run_changes WHERE run_id = ?", run_id)

    async def workflow_run_changes(self, workflow_id: str) -> int | None:
        return await self._counter(
            "SELECT n FROM workflow_run_changes WHERE workflow_id = ?", workflow_id
        )

    async def run_was_deleted(self, run_id: str) -> bool:
        # A run's insert starts its counter, and nothing deletes one.
        async with self._read() as db:
            row = await _one(
                db,
                "SELECT 1 FROM run_changes WHERE run_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM runs WHERE id = ?)",
                (run_id, run_id),
            )
        return row is not None

    async def _counter(self, sql: str, key: str) -> int:
        async with self._read() as db:
            row = await _one(db, sql, (key,))
        return 0 if row is None else int(row[0])

    # -- large payloads (sqlite_payloads.py) ---------------------------------
    async def put_payload(
        self,
        key: str,
        data: bytes,
        run_id: str | None = None,
        holder: PayloadHolder = PayloadHolder.RUN,
    ) -> None:
        await self._tx(lambda conn: sqlite_payloads.put_payload(conn, key, data, run_id, holder))

    async def get_payload(self, key: str) -> bytes | None:
        async with self._read() as db:
            return await sqlite_payloads.get_payload(db, key)

    async def firing_payload_holders(
        self, made_before: datetime, after: str, limit: int
    ) -> list[str]:
        async with self._read() as db:
            return await sqlite_payloads.firing_payload_holders(db, made_before, after, limit)

    async def delete_firing_payloads(
        self, made_before: datetime, limit: int, workflow_ids: Sequence[str] | None = None
    ) -> FiringRefsDeleted:
        async with self._write() as db:
            return await sqlite_payloads.delete_firing_payloads(
                db, made_before, limit, workflow_ids
            )

    async def adopt_older_firing_refs(self, limit: int) -> int:
        return await self._tx(lambda conn: sqlite_payloads.adopt_older_firing_refs(conn, limit))

    async def end_schedule_payloads(self, workflow_id: str) -> None:
        await self._tx(lambda conn: sqlite_payloads.end_schedule_payloads(conn, workflow_id))

    async def replace_schedule_payloads(
        self, workflow_id: str, keep: Sequence[str], made_before: datetime
    ) -> None:
        await self._tx(
            lambda conn: sqlite_payloads.replace_schedule_payloads(
                conn, workflow_id, keep, made_before
            )
        )

    # -- schedules' fire-now requests (sqlite_fires.py) -----------------------
    async def record_schedule_fire(
        self, schedule_id: str, requested_by: Identity, requested_at: datetime
    ) -> None:
        await self._tx(
            lambda conn: sqlite_fires.record_schedule_fire(
                conn, schedule_id, requested_by, requested_at
            )
        )

    async def claim_schedule_fire(
        self, schedule_id: str, firing_id: str, since: datetime, until: datetime
    ) -> Identity | None:
        return await self._tx(
            lambda conn: sqlite_fires.claim_schedule_fire(
                conn, schedule_id, firing_id, since, until
            )
        )

    async def delete_schedule_fires(self, schedule_id: str) -> None:
        async with self._write() as db:
            await db.execute("DELETE FROM schedule_fires WHERE schedule_id = ?", (schedule_id,))

    # -- tasks A2A steps started (sqlite_a2a_tasks.py) ------------------------
    async def record_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        await self._batched(lambda conn: sqlite_a2a_tasks.record_a2a_task(conn, task, at))

    async def follow_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        await self._batched(lambda conn: sqlite_a2a_tasks.follow_a2a_task(conn, task, at))

    async def settle_a2a_task(self, task: A2ATaskRef, now: datetime) -> bool:
        return await self._batched(lambda conn: sqlite_a2a_tasks.settle_a2a_task(conn, task, now))

    async def claim_abandoned_a2a_tasks(
        self, now: datetime, lease: timedelta, limit: int, *, followed_before: datetime
    ) -> list[AbandonedA2ATask]:
        return await self._tx(
            lambda conn: sqlite_a2a_tasks.claim_abandoned_a2a_tasks(
                conn, now, lease, limit, followed_before
            )
        )

    async def release_a2a_task(self, task: A2ATaskRef, failed_at: datetime) -> None:
        await self._tx(lambda conn: sqlite_a2a_tasks.release_a2a_task(conn, task, failed_at))

    async def forget_a2a_task(self, task: A2ATaskRef) -> None:
        await self._tx(lambda conn: sqlite_a2a_tasks.forget_a2a_task(conn, task))

    # -- run events ----------------------------------------------------------
    async def append_event(self, run_id: str, event: dict[str, Any], key: str | None = None) -> int:
        return await self._tx(lambda conn: _insert_event(conn, run_id, event, key))

    async def list_events(self, run_id: str, after_id: int, limit: int) -> list[dict[str, Any]]:
        async with self._read() as db:
            rows = await db.execute_fetchall(
                "SELECT id, doc FROM events WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?",
                (run_id, after_id, limit),
            )
        return [{**json.loads(doc), "id": event_id} for event_id, doc in rows]

    async def last_event_id(self, run_id: str) -> int:
        async with self._read() as db:
            row = await _one(
                db, "SELECT COALESCE(MAX(id), 0) FROM events WHERE run_id = ?", (run_id,)
            )
        return int(row[0]) if row else 0

    async def delete_events(self, run_id: str) -> None:
        async with self._write() as db:
            await db.execute("DELETE FROM events WHERE run_id = ?", (run_id,))

    async def watch_event_runs(self) -> AsyncIterator[set[str]]:
        # Its own read-only connection, read on the loop's thread like requests' reads: a
        # look that finds nothing (the usual case, 200 times a second) costs microseconds,
        # not a hop to a thread and back (which kept an API with one idle stream open at
        # ~5 % of a core). Ids are taken under SQLite's one write lock, so they become
        # visible in order: a high-water mark misses nothing.
        try:
            reader = SqliteReader(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot follow SQLite store {self.path}: {exc}") from exc
        try:
            row = await _one(reader, "SELECT COALESCE(MAX(id), 0) FROM events", ())
            last = int(row[0])
            yield set()
            while True:
                await asyncio.sleep(TAIL_SECONDS)
                rows = await reader.execute_fetchall(
                    "SELECT id, run_id FROM events WHERE id > ? ORDER BY id LIMIT ?",
                    (last, TAIL_PAGE),
                )
                if rows:
                    last = int(rows[-1][0])
                    yield {str(r[1]) for r in rows}
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store error: {exc}") from exc
        finally:
            reader.close()


# The run columns a change can touch (besides rev and the document).
_CHANGEABLE_RUN_COLUMNS = (
    "workflow_definition_id",
    "status",
    "parent_run_id",
    "started_at",
    "idempotency_key",
)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_UPSERT_NODE_RUN = (
    f"INSERT INTO node_runs ({NODE_RUN_COLUMNS}) VALUES ({marks_for(NODE_RUN_COLUMNS)})"
    " ON CONFLICT (id) DO UPDATE SET workflow_run_id = excluded.workflow_run_id,"
    " started_at = excluded.started_at, rev = excluded.rev, doc = excluded.doc"
    " WHERE excluded.rev >= node_runs.rev"
)


# A node run taken over by a newer execution: whatever its revs (read in this transaction).
_REPLACE_NODE_RUN = _UPSERT_NODE_RUN.rsplit(" WHERE ", 1)[0]


def _run_executions(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    """The run's execution fields (activities/store/executions.py); None: no such run."""
    row = conn.execute(
        "SELECT json_extract(doc, '$.execution'), json_extract(doc, '$.earlier_executions')"
        " FROM runs WHERE id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    return {"execution": row[0], "earlier_executions": json.loads(row[1] or "[]")}


def _take_over_run(
    conn: sqlite3.Connection, run_id: str, rev: int, stored: dict[str, Any], columns: list[str]
) -> None:
    """Write a newer execution's changes over the run whatever its rev (within the
    caller's transaction, after its read)."""
    paths = "".join(", ?, json(?)" for _ in stored)
    conn.execute(
        f"UPDATE runs SET doc = json_set(doc, '$.rev', ?{paths}), rev = ?"
        + "".join(f", {column} = ?" for column in columns)
        + " WHERE id = ?",
        (
            rev,
            *(part for name, value in stored.items() for part in (f"$.{name}", _json(value))),
            rev,
            *(stored[column] for column in columns),
            run_id,
        ),
    )


def _fill_missed_start(
    conn: sqlite3.Connection, stored: dict[str, Any] | None, fields: dict[str, Any]
) -> None:
    """A refused write's attempt start, into a stored node run that shows none
    (`start_missed`); its status, rev and the rest stay as stored."""
    missed = start_missed(stored, fields)
    if not missed:
        return
    node_run_id, _, started_at, _, doc = node_run_row(
        from_stored(NodeRunRecord, {**(stored or {}), **missed})
    )
    conn.execute(
        "UPDATE node_runs SET started_at = ?, doc = ? WHERE id = ?", (started_at, doc, node_run_id)
    )


def _insert_event(
    conn: sqlite3.Connection, run_id: str, event: dict[str, Any], key: str | None = None
) -> int:
    """Append an event; a keyed one the run's log already holds is not appended again."""
    doc = to_json(event_document(event))
    if key is None:
        cursor = conn.execute("INSERT INTO events (run_id, doc) VALUES (?, ?)", (run_id, doc))
        assert cursor.lastrowid is not None
        return cursor.lastrowid
    # DO NOTHING takes no id (AUTOINCREMENT moves only on an insert): ids stay monotonic,
    # and the live feed's high-water mark sees no gap it could misread.
    cursor = conn.execute(
        "INSERT INTO events (run_id, doc, key) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id, key) DO NOTHING",
        (run_id, doc, key),
    )
    if cursor.rowcount == 1:
        assert cursor.lastrowid is not None
        return cursor.lastrowid
    row = conn.execute(
        "SELECT id FROM events WHERE run_id = ? AND key = ?", (run_id, key)
    ).fetchone()
    return int(row[0])


def run_transaction(conn: sqlite3.Connection, op: Callable[[sqlite3.Connection], T]) -> T:
    """`op` inside BEGIN IMMEDIATE … COMMIT; rolled back if it raises (on the db thread)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = op(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise
    return result


def _run_exists(conn: sqlite3.Connection, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None


def run_batch(
    conn: sqlite3.Connection, ops: list[Callable[[sqlite3.Connection], Any]]
) -> list[tuple[bool, Any]]:
    """Every op in one transaction; if one fails, each alone, so only its caller sees it."""
    try:
        return [(True, result) for result in run_transaction(conn, lambda c: [op(c) for op in ops])]
    except Exception:
        pass
    outcomes: list[tuple[bool, Any]] = []
    for op in ops:
        try:
            outcomes.append((True, run_transaction(conn, op)))
        except Exception as exc:
            outcomes.append((False, exc))
    return outcomes


def _store_error(exc: BaseException) -> BaseException:
    """sqlite3 errors as the store's errors; others (a bug, cancellation) unchanged."""
    if isinstance(exc, sqlite3.IntegrityError) and "workflows.name" in str(exc):
        return DuplicateNameError("a workflow with this name already exists")
    if isinstance(exc, sqlite3.OperationalError) and _UNAVAILABLE.search(str(exc)):
        return StoreUnavailable(f"SQLite store unavailable: {exc}")
    if isinstance(exc, sqlite3.Error):
        return StoreError(f"SQLite store error: {exc}")
    return exc


# OperationalErrors that pass: a lock held past the busy timeout, a file gone or unreadable,
# a full disk (SQLITE_FULL, "database or disk is full": space comes back once freed).
_UNAVAILABLE = re.compile(r"locked|busy|unable to open|disk I/O|readonly|is full", re.IGNORECASE)


def _file_identity(path: Path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino


def _can_open(path: Path) -> None:
    """sqlite3's own error when the file cannot be opened, before aiosqlite starts its
    thread: on a failed connect aiosqlite stops that thread without waiting for it, and its
    last callback could meet the closed event loop of a process exiting on that error (a
    traceback after the one-line start-up error)."""
    sqlite3.connect(path).close()


def _grants(stored: str) -> list[Grant]:
    return [Grant.model_validate(g) for g in json.loads(stored)]


def _load(model: type[M], doc: str) -> M:
    """A record from its stored JSON (pydantic parses the text itself: no dict in between).

    pydantic writes values nested up to 255 levels but parses JSON only to 200; a record
    between the two (a deep step output) is parsed by the json module instead.
    """
    try:
        return model.model_validate_json(doc)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise
        return from_stored(model, json.loads(doc))


def _settle(
    future: asyncio.Future[Any], result: Any = None, error: BaseException | None = None
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def _one(db: aiosqlite.Connection | SqliteReader, sql: str, params: Sequence[Any]) -> Any:
    rows = await db.execute_fetchall(sql, params)  # in a write: one trip to the db thread
    return next(iter(rows), None)


def _version_summary(version: int, fields: list[Any]) -> VersionSummary:
    created_at, name, description, nodes, created_by = fields
    return VersionSummary(
        version=version,
        created_at=datetime.fromisoformat(created_at),
        name=name,
        description=description,
        num_nodes=stored_node_count(nodes),
        created_by=created_by,
    )


async def _put_version(db: aiosqlite.Connection, record: WorkflowRecord) -> None:
    await db.execute(
        "INSERT OR REPLACE INTO workflow_versions (workflow_id, version, doc) VALUES (?, ?, ?)",
        version_row(record),
    )


def _visible(column: str, viewer: frozenset[str]) -> str:
    """A clause: `column` names a workflow one of the viewer's principals may VIEW."""
    return (
        f"{column} IN (SELECT workflow_id FROM workflow_viewers"
        f" WHERE principal IN ({marks(len(viewer))}))"
    )


async def _put_viewers(db: aiosqlite.Connection, workflow_id: str, principals: list[str]) -> None:
    await db.execute("DELETE FROM workflow_viewers WHERE workflow_id = ?", (workflow_id,))
    await db.executemany(
        "INSERT INTO workflow_viewers (principal, workflow_id) VALUES (?, ?)",
        [(principal, workflow_id) for principal in principals],
    )


# Runs deleted per transaction when their workflow is (`delete_workflow`).
DELETE_BATCH_RUNS = 500
# What else goes with a workflow, in its last transaction (its runs went before).
_WORKFLOW_ROWS = (
    ("workflow_versions", "workflow_id"),
    ("workflow_viewers", "workflow_id"),
)


_TERMINAL = tuple(sorted(TERMINAL_RUN_STATUSES))
# Runs the retention deletes. A run ends after it starts, so only those started before the
# cutoff are read (by the status index), and their documents parsed for their end.
_ENDED_RUNS = (
    "SELECT id, ended FROM (SELECT id, COALESCE(json_extract(doc, '$.finished_at'),"
    " json_extract(doc, '$.updated_at')) AS ended FROM runs"
    f" WHERE status IN ({marks(len(_TERMINAL))}) AND started_at < ?) WHERE ended < ? LIMIT ?"
)


# Rows (a run, its node runs, its events) one retention batch deletes at most: every other
# write waits for the batch's transaction, and 370 runs of a 1,500-iteration loop (1.7
# million rows) held them 5.8 s. ~20,000 rows take ~0.1 s; a run larger goes alone.
DELETE_ROWS = 20_000


async def _within_rows(db: aiosqlite.Connection, ids: list[str], most: int) -> list[str]:
    """The first of `ids` whose rows together stay within `most` (one run at least)."""
    if len(ids) <= 1:
        return ids
    held, counts = marks(len(ids)), dict.fromkeys(ids, 1)
    for table, column in (("node_runs", "workflow_run_id"), ("events", "run_id")):
        found = await db.execute_fetchall(
            f"SELECT {column}, COUNT(*) FROM {table} WHERE {column} IN ({held}) GROUP BY {column}",
            ids,
        )
        for run_id, count in found:
            counts[run_id] += count
    taken: list[str] = []
    rows = 0
    for run_id in ids:
        rows += counts[run_id]
        if taken and rows > most:
            break
        taken.append(run_id)
    return taken


async def _delete_runs(db: aiosqlite.Connection, ids: list[str], hand_over: bool = False) -> int:
    """Delete these runs with their node runs, events and the payloads only they used;
    how many payloads went. `hand_over`: their references go to the firings' sweep as made
    now instead, which deletes them once Temporal has closed each run (one may be closing)."""
    if not ids:
        return 0
    held = marks(len(ids))
    await db.execute(f"DELETE FROM events WHERE run_id IN ({held})", ids)
    await db.execute(f"DELETE FROM node_runs WHERE workflow_run_id IN ({held})", ids)
    await db.execute(f"DELETE FROM runs WHERE id IN ({held})", ids)
    if hand_over:
        await sqlite_payloads.hand_over_payloads(db, ids)
        return 0
    return await sqlite_payloads.delete_unused_payloads(db, ids)


def _runs(rows: Any) -> list[RunRecord]:
    return [_load(RunRecord, r[0]) for r in rows]
