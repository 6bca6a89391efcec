"""Large payloads on SQLite (the claim check), with the references that say how long each
is kept (`payload_refs`: base.PayloadHolder).

A payload and its reference are written in one transaction, and a run's delete takes its
references and the payloads no other reference holds in the delete's own transaction, so
a put racing the delete of a payload's last run either lands after it (and writes the
payload afresh) or before it (and its reference keeps the payload).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

import aiosqlite

from activities.store.base import KEPT, PayloadHolder
from activities.store.documents import iso_utc
from activities.store.firing_ids import FIRING_ID_GLOB
from activities.store.records import FiringRefsDeleted
from activities.store.sqlite_reader import SqliteReader
from activities.store.sqlite_rows import marks


def put_payload(
    conn: sqlite3.Connection, key: str, data: bytes, run_id: str | None, holder: PayloadHolder
) -> None:
    """The payload and its reference (`Store.put_payload`), inside the caller's transaction:
    a delete of the payload's last run waits for it, or went before it and this writes the
    payload afresh (and a run's reference is the sweep's: `_RUN_GONE`)."""
    ref = (key, KEPT, PayloadHolder.RUN) if run_id is None else (key, run_id, holder)
    if run_id is not None and holder == PayloadHolder.RUN:
        if conn.execute(_RUN_GONE, (run_id, run_id)).fetchone()[0]:
            ref = (key, run_id, PayloadHolder.FIRING)
    conn.execute("INSERT OR IGNORE INTO payloads (key, data) VALUES (?, ?)", (key, data))
    conn.execute(_REFER, (*ref, iso_utc(datetime.now(UTC))))


async def get_payload(db: SqliteReader, key: str) -> bytes | None:
    rows = await db.execute_fetchall("SELECT data FROM payloads WHERE key = ?", (key,))
    return next((bytes(row[0]) for row in rows), None)


async def firing_payload_holders(
    db: SqliteReader, made_before: datetime, after: str, limit: int
) -> list[str]:
    rows = await db.execute_fetchall(_FIRING_HOLDERS, (iso_utc(made_before), after, limit))
    return [str(row[0]) for row in rows]


async def delete_firing_payloads(
    db: aiosqlite.Connection,
    made_before: datetime,
    limit: int,
    workflow_ids: Sequence[str] | None = None,
) -> FiringRefsDeleted:
    """`Store.delete_firing_payloads`, inside the caller's write transaction."""
    of: list[str] = []
    sql = _OLD_FIRING_REFS.format(of="")
    if workflow_ids is not None:
        if not workflow_ids:
            return FiringRefsDeleted(0, 0)
        of = list(workflow_ids)
        sql = _OLD_FIRING_REFS.format(of=f" AND run_id IN ({marks(len(of))})")
    refs = [
        (str(row[0]), str(row[1]))
        for row in await db.execute_fetchall(sql, (iso_utc(made_before), *of, limit))
    ]
    if not refs:
        return FiringRefsDeleted(0, 0)
    await db.executemany("DELETE FROM payload_refs WHERE key = ? AND run_id = ?", refs)
    keys = sorted({key for key, _ in refs})
    cursor = await db.execute(
        f"DELETE FROM payloads WHERE key IN ({marks(len(keys))}) AND NOT EXISTS"
        " (SELECT 1 FROM payload_refs WHERE payload_refs.key = payloads.key)",
        keys,
    )
    return FiringRefsDeleted(len(refs), cursor.rowcount)


def adopt_older_firing_refs(conn: sqlite3.Connection, limit: int) -> int:
    """`Store.adopt_older_firing_refs`, inside the caller's transaction."""
    return conn.execute(_OLDER_FIRING_REFS, (iso_utc(datetime.now(UTC)), limit)).rowcount


def end_schedule_payloads(conn: sqlite3.Connection, workflow_id: str) -> None:
    """A deleted schedule's own references become a firing's, made now."""
    conn.execute(
        "UPDATE payload_refs SET holder = ?, made_at = ? WHERE run_id = ?",
        (PayloadHolder.FIRING, iso_utc(datetime.now(UTC)), workflow_id),
    )


def replace_schedule_payloads(
    conn: sqlite3.Connection, workflow_id: str, keep: Sequence[str], made_before: datetime
) -> None:
    """`Store.replace_schedule_payloads`, inside the caller's transaction."""
    now, kept = iso_utc(datetime.now(UTC)), marks(len(keep))
    conn.execute(
        f"UPDATE payload_refs SET holder = ?, made_at = ? WHERE run_id = ? AND key IN ({kept})",
        (PayloadHolder.SCHEDULE, now, workflow_id, *keep),
    )
    conn.execute(
        "UPDATE payload_refs SET holder = ?, made_at = ? WHERE run_id = ? AND holder = ?"
        f" AND made_at < ? AND key NOT IN ({kept})",
        (
            PayloadHolder.FIRING,
            now,
            workflow_id,
            PayloadHolder.SCHEDULE,
            iso_utc(made_before),
            *keep,
        ),
    )


async def hand_over_payloads(db: aiosqlite.Connection, ids: list[str]) -> None:
    """These runs' references go to the firings' sweep as made now, which deletes them once
    Temporal has closed each run (one may be closing)."""
    await db.execute(
        f"UPDATE payload_refs SET holder = ?, made_at = ? WHERE run_id IN ({marks(len(ids))})",
        [PayloadHolder.FIRING, iso_utc(datetime.now(UTC)), *ids],
    )


async def delete_unused_payloads(db: aiosqlite.Connection, ids: list[str]) -> int:
    """Drop these runs' references and the payloads no other run (nor KEPT) refers to; how
    many payloads went."""
    held = marks(len(ids))
    cursor = await db.execute(_UNUSED_PAYLOADS.format(held=held), [*ids, *ids])
    await db.execute(f"DELETE FROM payload_refs WHERE run_id IN ({held})", ids)
    return cursor.rowcount


# A repeat renews what the reference is from and when it was made: a firing's activity run
# again keeps its payloads from then, a schedule made anew under a deleted one's id its own.
# A run's put stays the sweep's (a deleted workflow's run still closing writes on).
_REFER = (
    "INSERT INTO payload_refs (key, run_id, holder, made_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (key, run_id) DO UPDATE SET made_at = excluded.made_at, holder ="
    " CASE WHEN excluded.holder = 'run' AND holder = 'firing' THEN holder ELSE excluded.holder END"
)
# A run with no record (its workflow deleted while it was still closing in Temporal, or
# retention deleted it), or whose references a delete handed to the sweep: no run's
# delete will take what it puts now, so it is the sweep's, gone once Temporal closed it.
_RUN_GONE = (
    "SELECT NOT EXISTS (SELECT 1 FROM runs WHERE id = ?) OR EXISTS"
    " (SELECT 1 FROM payload_refs WHERE run_id = ? AND holder = 'firing')"
)
_OLD_FIRING_REFS = (
    "SELECT key, run_id FROM payload_refs WHERE holder = 'firing' AND made_at < ?{of}"
    " ORDER BY made_at LIMIT ?"
)
_FIRING_HOLDERS = (
    "SELECT DISTINCT run_id FROM payload_refs WHERE holder = 'firing' AND made_at < ?"
    " AND run_id > ? ORDER BY run_id LIMIT ?"
)
# An older worker's firing's references: `holder` its column's default, `made_at` NULL.
_OLDER_FIRING_REFS = (
    "UPDATE payload_refs SET holder = 'firing', made_at = ? WHERE (key, run_id) IN"
    " (SELECT key, run_id FROM payload_refs WHERE run_id GLOB '" + FIRING_ID_GLOB + "'"
    " AND holder = 'run' AND NOT EXISTS (SELECT 1 FROM runs WHERE id = payload_refs.run_id)"
    " LIMIT ?)"
)

# The payloads these runs refer to and no other run (nor KEPT) does.
_UNUSED_PAYLOADS = (
    "DELETE FROM payloads WHERE key IN (SELECT key FROM payload_refs WHERE run_id IN ({held}))"
    " AND NOT EXISTS (SELECT 1 FROM payload_refs AS other WHERE other.key = payloads.key"
    " AND other.run_id NOT IN ({held}))"
)
