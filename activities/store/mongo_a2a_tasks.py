"""The tasks A2A steps started, on MongoDB (`Store.record_a2a_task`): one document each in
`a2a_tasks`, while its step follows it, keyed by node run, agent and task; a claim is one
conditional `update_one` per task, so of two sweeps one takes each. `noted_at` is when an
attempt last said it follows the task: its note, then every few seconds while it does."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.database import AsyncDatabase

from activities.store.documents import iso_utc
from activities.store.records import A2ATaskRef, AbandonedA2ATask
from temporal_workflows.read_model import OPEN_NODE_STATUSES, TERMINAL_RUN_STATUSES

Doc = dict[str, Any]


def _id(task: A2ATaskRef) -> str:
    return json.dumps([task.node_run_id, task.agent, task.task_id])


def _unclaimed(now: datetime) -> Doc:
    return {"$or": [{"claimed_until": None}, {"claimed_until": {"$lte": iso_utc(now)}}]}


async def record_a2a_task(db: AsyncDatabase[Doc], task: A2ATaskRef, at: datetime) -> None:
    fields = {
        "run_id": task.run_id,
        "node_run_id": task.node_run_id,
        "agent": task.agent,
        "task_id": task.task_id,
        "claimed_until": None,
        "first_failed_at": None,
    }
    # Fixed-width UTC text: the later string is the later time.
    later = {"noted_at": iso_utc(at)}
    await db.a2a_tasks.update_one(
        {"_id": _id(task)}, {"$setOnInsert": fields, "$max": later}, upsert=True
    )


async def follow_a2a_task(db: AsyncDatabase[Doc], task: A2ATaskRef, at: datetime) -> None:
    # No upsert: a note settled meanwhile is not written again.
    await db.a2a_tasks.update_one({"_id": _id(task)}, {"$max": {"noted_at": iso_utc(at)}})


async def settle_a2a_task(db: AsyncDatabase[Doc], task: A2ATaskRef, now: datetime) -> bool:
    deleted = await db.a2a_tasks.delete_one({"_id": _id(task), **_unclaimed(now)})
    if deleted.deleted_count:
        return True
    return await db.a2a_tasks.find_one({"_id": _id(task)}, {"_id": 1}) is None


async def claim_abandoned_a2a_tasks(
    db: AsyncDatabase[Doc],
    now: datetime,
    lease: timedelta,
    limit: int,
    followed_before: datetime,
) -> list[AbandonedA2ATask]:
    """`Store.claim_abandoned_a2a_tasks`: the unclaimed tasks not followed since
    `followed_before` read oldest first, `PAGE` at a time, their runs and node runs looked
    up, and each abandoned one claimed on its own (one another sweep claimed meanwhile, or
    its step said it follows meanwhile, is left)."""
    claimed: list[AbandonedA2ATask] = []
    unfollowed = _unfollowed(now, followed_before)
    cursor = db.a2a_tasks.find(unfollowed).sort([("noted_at", ASCENDING), ("_id", ASCENDING)])
    page: list[Doc] = []
    async for doc in cursor:
        page.append(doc)
        if len(page) == PAGE:
            claimed += await _claim(db, page, unfollowed, now + lease, limit - len(claimed))
            page = []
            if len(claimed) >= limit:
                break
    if page and len(claimed) < limit:
        claimed += await _claim(db, page, unfollowed, now + lease, limit - len(claimed))
    await cursor.close()
    return claimed


# Tasks looked up together (their runs' and node runs' statuses in one read each).
PAGE = 200


def _unfollowed(now: datetime, followed_before: datetime) -> Doc:
    return {**_unclaimed(now), "noted_at": {"$lte": iso_utc(followed_before)}}


async def _claim(
    db: AsyncDatabase[Doc], page: list[Doc], unfollowed: Doc, until: datetime, limit: int
) -> list[AbandonedA2ATask]:
    run_ids = list({d["run_id"] for d in page})
    node_run_ids = list({d["node_run_id"] for d in page})
    runs = await db.runs.find({"_id": {"$in": run_ids}}, {"status": 1}).to_list()
    nodes = await db.node_runs.find({"_id": {"$in": node_run_ids}}, {"status": 1}).to_list()
    run_status = {d["_id"]: d.get("status") for d in runs}
    node_status = {d["_id"]: d.get("status") for d in nodes}
    claimed: list[AbandonedA2ATask] = []
    for doc in page:
        if len(claimed) >= limit:
            break
        status = run_status.get(doc["run_id"])
        node = node_status.get(doc["node_run_id"])
        # Gone: its run ended or is not in the store (deleted), or its node run ended (a
        # node run not written yet is still open).
        if status is not None and status not in TERMINAL_RUN_STATUSES:
            if node is None or node in OPEN_NODE_STATUSES:
                continue
        # Taken under the same condition it was read by: still unclaimed, not followed since.
        taken = await db.a2a_tasks.update_one(
            {"_id": doc["_id"], **unfollowed},
            {"$set": {"claimed_until": iso_utc(until)}},
        )
        if taken.modified_count:
            ref = A2ATaskRef(doc["run_id"], doc["node_run_id"], doc["agent"], doc["task_id"])
            failed = doc.get("first_failed_at")
            when = None if failed is None else datetime.fromisoformat(failed)
            claimed.append(AbandonedA2ATask(ref, when))
    return claimed


async def release_a2a_task(db: AsyncDatabase[Doc], task: A2ATaskRef, failed_at: datetime) -> None:
    # Not read first: a release landing in between would lose its first failure (SQLite's
    # COALESCE keeps it). The failure is set only where none is, in one conditional write.
    first = await db.a2a_tasks.update_one(
        {"_id": _id(task), "first_failed_at": None},
        {"$set": {"claimed_until": None, "first_failed_at": iso_utc(failed_at)}},
    )
    if not first.matched_count:
        await db.a2a_tasks.update_one({"_id": _id(task)}, {"$set": {"claimed_until": None}})


async def forget_a2a_task(db: AsyncDatabase[Doc], task: A2ATaskRef) -> None:
    await db.a2a_tasks.delete_one({"_id": _id(task)})
