"""The tasks A2A steps started, on SQLite (`Store.record_a2a_task`): one row each in
`a2a_tasks`, while its step follows it; a claim is one transaction, so of two sweeps one
takes each task. `noted_at` is when an attempt last said it follows the task: its note,
then every few seconds while it does (`follow_a2a_task`)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from activities.store.documents import iso_utc
from activities.store.records import A2ATaskRef, AbandonedA2ATask
from temporal_workflows.read_model import OPEN_NODE_STATUSES, TERMINAL_RUN_STATUSES

_KEY = "node_run_id = ? AND agent = ? AND task_id = ?"
_ENDED_RUN = ", ".join(f"'{s}'" for s in sorted(TERMINAL_RUN_STATUSES))
_OPEN_NODE = ", ".join(f"'{s}'" for s in sorted(OPEN_NODE_STATUSES))
# Noted tasks whose step is gone: no sweep holds them, no attempt said it follows them
# since the bound given, and their run ended (or is gone: deleted) or their node run did
# (a node run not written yet is still open).
_ABANDONED = (
    "SELECT t.run_id, t.node_run_id, t.agent, t.task_id, t.first_failed_at FROM a2a_tasks t"
    " LEFT JOIN runs r ON r.id = t.run_id LEFT JOIN node_runs n ON n.id = t.node_run_id"
    " WHERE (t.claimed_until IS NULL OR t.claimed_until <= ?) AND t.noted_at <= ?"
    f" AND (r.id IS NULL OR r.status IN ({_ENDED_RUN})"
    f" OR json_extract(n.doc, '$.status') NOT IN ({_OPEN_NODE}))"
    " ORDER BY t.noted_at LIMIT ?"
)


def _key(task: A2ATaskRef) -> tuple[str, str, str]:
    return (task.node_run_id, task.agent, task.task_id)


def record_a2a_task(conn: sqlite3.Connection, task: A2ATaskRef, at: datetime) -> None:
    conn.execute(
        "INSERT INTO a2a_tasks (node_run_id, agent, task_id, run_id, noted_at)"
        " VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT DO UPDATE SET noted_at = max(noted_at, excluded.noted_at)",
        (*_key(task), task.run_id, iso_utc(at)),
    )


def follow_a2a_task(conn: sqlite3.Connection, task: A2ATaskRef, at: datetime) -> None:
    """`Store.follow_a2a_task`: a note settled meanwhile is not written again."""
    conn.execute(
        f"UPDATE a2a_tasks SET noted_at = max(noted_at, ?) WHERE {_KEY}", (iso_utc(at), *_key(task))
    )


def settle_a2a_task(conn: sqlite3.Connection, task: A2ATaskRef, now: datetime) -> bool:
    """`Store.settle_a2a_task`, inside the caller's write transaction."""
    unclaimed = "(claimed_until IS NULL OR claimed_until <= ?)"
    deleted = conn.execute(
        f"DELETE FROM a2a_tasks WHERE {_KEY} AND {unclaimed}", (*_key(task), iso_utc(now))
    ).rowcount
    if deleted:
        return True
    return conn.execute(f"SELECT 1 FROM a2a_tasks WHERE {_KEY}", _key(task)).fetchone() is None


def claim_abandoned_a2a_tasks(
    conn: sqlite3.Connection,
    now: datetime,
    lease: timedelta,
    limit: int,
    followed_before: datetime,
) -> list[AbandonedA2ATask]:
    """`Store.claim_abandoned_a2a_tasks`, inside the caller's write transaction."""
    rows = conn.execute(_ABANDONED, (iso_utc(now), iso_utc(followed_before), limit)).fetchall()
    claimed: list[AbandonedA2ATask] = []
    for run_id, node_run_id, agent, task_id, first_failed_at in rows:
        task = A2ATaskRef(run_id, node_run_id, agent, task_id)
        conn.execute(
            f"UPDATE a2a_tasks SET claimed_until = ? WHERE {_KEY}",
            (iso_utc(now + lease), *_key(task)),
        )
        failed = None if first_failed_at is None else datetime.fromisoformat(first_failed_at)
        claimed.append(AbandonedA2ATask(task, failed))
    return claimed


def release_a2a_task(conn: sqlite3.Connection, task: A2ATaskRef, failed_at: datetime) -> None:
    conn.execute(
        "UPDATE a2a_tasks SET claimed_until = NULL,"
        f" first_failed_at = COALESCE(first_failed_at, ?) WHERE {_KEY}",
        (iso_utc(failed_at), *_key(task)),
    )


def forget_a2a_task(conn: sqlite3.Connection, task: A2ATaskRef) -> None:
    conn.execute(f"DELETE FROM a2a_tasks WHERE {_KEY}", _key(task))
