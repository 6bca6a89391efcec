"""Schedules' fire-now requests on SQLite (`Store.record_schedule_fire`): one row each, in
the `schedule_fires` table; a claim is one transaction, so of two firings one takes it."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from activities.store.base import FIRE_REQUESTS_KEPT
from activities.store.documents import iso_utc
from temporal_workflows.contracts import Identity


def record_schedule_fire(
    conn: sqlite3.Connection, schedule_id: str, requested_by: Identity, requested_at: datetime
) -> None:
    conn.execute(
        "DELETE FROM schedule_fires WHERE schedule_id = ? AND requested_at < ?",
        (schedule_id, iso_utc(requested_at - FIRE_REQUESTS_KEPT)),
    )
    conn.execute(
        "INSERT INTO schedule_fires (schedule_id, requested_at, requested_by) VALUES (?, ?, ?)",
        (schedule_id, iso_utc(requested_at), requested_by.model_dump_json()),
    )


def claim_schedule_fire(
    conn: sqlite3.Connection, schedule_id: str, firing_id: str, since: datetime, until: datetime
) -> Identity | None:
    """`Store.claim_schedule_fire`, inside the caller's write transaction."""
    row = conn.execute(
        "SELECT id, requested_by FROM schedule_fires WHERE schedule_id = ? AND claimed_by = ?",
        (schedule_id, firing_id),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id, requested_by FROM schedule_fires WHERE schedule_id = ?"
            " AND claimed_by IS NULL AND requested_at >= ? AND requested_at < ?"
            " ORDER BY requested_at DESC, id DESC LIMIT 1",
            (schedule_id, iso_utc(since), iso_utc(until)),
        ).fetchone()
        if row is None:
            return None
        conn.execute("UPDATE schedule_fires SET claimed_by = ? WHERE id = ?", (firing_id, row[0]))
    return Identity.model_validate(json.loads(row[1]))
