"""The SQLite store's read connection: reads run on the event loop's own thread.

A WAL reader never waits for the writer (it reads the last commit), and a read of a few
indexed rows costs tens of microseconds: less than handing it to aiosqlite's thread and
taking the GIL back, which under load queues every read behind every write and behind
each other. Writes stay on aiosqlite's thread (group commits, busy waits off the loop).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from activities.store.base import ReadTooLarge

# A WAL reader waits only while another connection recovers the WAL (a crashed writer):
# short, and rare; past this, the read fails as the store being unavailable.
READ_BUSY_TIMEOUT_SECONDS = 2.0
# Rows a bounded read takes at a time.
FETCH_ROWS = 256


class SqliteReader:
    """One read-only connection, used only from the event loop's thread (statements run to
    completion before the loop moves on, so concurrent requests never interleave)."""

    def __init__(self, path: Path) -> None:
        # check_same_thread off: the loop's thread is the only user, but it need not be
        # the thread that opened the store.
        self._conn = sqlite3.connect(
            path, timeout=READ_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA query_only = ON")

    async def execute_fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._conn.execute(sql, params).fetchall()

    async def documents_by_id(
        self, table: str, ids: list[str], max_bytes: int | None = None
    ) -> list[str]:
        """The `doc` of each of `ids` in `table`, in the order of `ids`, read FETCH_ROWS at
        a time; ReadTooLarge as soon as they pass `max_bytes` together (when given)."""
        documents: list[str] = []
        size = 0
        for at in range(0, len(ids), FETCH_ROWS):
            chunk = ids[at : at + FETCH_ROWS]
            marks = ", ".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT id, doc FROM {table} WHERE id IN ({marks})", chunk
            ).fetchall()
            by_id = dict(rows)
            for doc_id in chunk:
                document = by_id.get(doc_id)
                if document is None:
                    continue  # deleted between the two reads
                size += len(document)
                if max_bytes is not None and size > max_bytes:
                    raise ReadTooLarge(max_bytes, len(documents) + 1)
                documents.append(document)
        return documents

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(sql, params)

    def close(self) -> None:
        self._conn.close()
