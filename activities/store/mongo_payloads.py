"""Large payloads on MongoDB (the claim check), with the runs whose histories carry them.

Three collections: `payloads` holds a payload's chunks, `payload_refs` one document per
(payload, run) reference, `payload_heads` one per payload present, naming the generation
(`gen`) its chunks carry. Without a transaction across documents, the order of writes keeps
a put racing the delete of a payload's last run from losing it:

- a put writes its reference first, then takes the head (made if absent), then writes every
  chunk under the head's generation;
- a delete removes its runs' references, then a head no reference is left on, then checks
  again: a reference come meanwhile puts the head back (its put may have read it), else it
  deletes the chunks of that head's generation only. A put whose reference came after the
  check found no head, so made a new generation, whose chunks the delete does not touch.

A race may leave a payload behind, never take one a run refers to. A firing's references
(`PayloadHolder.FIRING`, by the time each was made) go the same way once old enough.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from activities.store.base import KEPT, PayloadHolder
from activities.store.documents import iso_utc
from activities.store.firing_ids import FIRING_ID
from activities.store.records import FiringRefsDeleted

Doc = dict[str, Any]
# Kept in chunks well below MongoDB's 16 MB document limit.
CHUNK_BYTES = 8 * 1024 * 1024


async def put_payload(
    db: AsyncDatabase[Doc], key: str, data: bytes, run_id: str | None, holder: PayloadHolder
) -> None:
    if run_id is None:
        await _refer(db, key, KEPT, PayloadHolder.RUN)
    else:
        await _refer(db, key, run_id, holder)
        if holder == PayloadHolder.RUN:
            await _swept_if_run_gone(db, key, run_id)
    if await db.payloads.find_one({"key": key, "gen": {"$exists": False}}, {"_id": 1}):
        # Stored before references were recorded: the runs using it are unknown.
        await _refer(db, key, KEPT, PayloadHolder.RUN)
    head = await db.payload_heads.find_one_and_update(
        {"_id": key},
        {"$setOnInsert": {"gen": uuid.uuid4().hex}},
        upsert=True,
        return_document=ReturnDocument.AFTER,
    )
    assert head is not None  # an upsert returns what it made
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    for index, chunk in enumerate(chunks):
        # Written by every put (not only the first): present when it returns, whatever a
        # delete of an older generation did meanwhile.
        fields = {"key": key, "index": index, "count": len(chunks), "data": chunk}
        await db.payloads.update_one(
            {"_id": f"{key}:{index}"}, {"$set": {**fields, "gen": head["gen"]}}, upsert=True
        )


async def _refer(db: AsyncDatabase[Doc], key: str, run_id: str, holder: PayloadHolder) -> None:
    # A repeat renews what it is from and when it was made (as on SQLite); a run's put
    # leaves one the sweep's (a deleted workflow's run still closing writes on).
    made_at = iso_utc(datetime.now(UTC))
    if holder == PayloadHolder.RUN:
        swept = {"_id": f"{key} {run_id}", "holder": str(PayloadHolder.FIRING)}
        if (await db.payload_refs.update_one(swept, {"$set": {"made_at": made_at}})).matched_count:
            return
    await db.payload_refs.update_one(
        {"_id": f"{key} {run_id}"},
        {
            "$setOnInsert": {"key": key, "run_id": run_id},
            "$set": {"holder": str(holder), "made_at": made_at},
        },
        upsert=True,
    )


async def _swept_if_run_gone(db: AsyncDatabase[Doc], key: str, run_id: str) -> None:
    """A run's reference becomes the sweep's when the run has no record (its workflow
    deleted while it was still closing in Temporal) or a delete handed its others over: no
    run's delete would take it. Looked at after the reference is written: a workflow's
    delete that this finds the run still in hands it over after deleting the runs."""
    gone = await db.runs.find_one({"_id": run_id}, {"_id": 1}) is None
    if not gone:
        handed = {"run_id": run_id, "holder": str(PayloadHolder.FIRING)}
        gone = await db.payload_refs.find_one(handed, {"_id": 1}) is not None
    if gone:
        await db.payload_refs.update_one(
            {"_id": f"{key} {run_id}", "holder": str(PayloadHolder.RUN)},
            {"$set": {"holder": str(PayloadHolder.FIRING), "made_at": iso_utc(datetime.now(UTC))}},
        )


async def firing_payload_holders(
    db: AsyncDatabase[Doc], made_before: datetime, after: str, limit: int
) -> list[str]:
    """Up to `limit` workflow ids after `after`, in order, with firings' references made
    before `made_before`."""
    old: Doc = {"holder": str(PayloadHolder.FIRING), "made_at": {"$lt": iso_utc(made_before)}}
    found: list[str] = []
    while len(found) < limit:
        page = await (
            db.payload_refs.find({**old, "run_id": {"$gt": after}}, {"run_id": 1})
            .sort("run_id", 1)
            .limit(limit)
            .to_list()
        )
        for doc in page:  # in order: a workflow's references are together
            if doc["run_id"] not in found[-1:]:
                found.append(doc["run_id"])
        if len(page) < limit:
            break
        after = page[-1]["run_id"]
    return found[:limit]


async def delete_firing_payloads(
    db: AsyncDatabase[Doc],
    made_before: datetime,
    limit: int,
    workflow_ids: Sequence[str] | None = None,
) -> FiringRefsDeleted:
    """Drop up to `limit` firings' references made before `made_before` (of these workflows
    only, unless None), and the payloads nothing refers to any more."""
    old: Doc = {"holder": str(PayloadHolder.FIRING), "made_at": {"$lt": iso_utc(made_before)}}
    if workflow_ids is not None:
        old["run_id"] = {"$in": list(workflow_ids)}
    found = await db.payload_refs.find(old, {"key": 1}).sort("made_at", 1).limit(limit).to_list()
    for ref in found:
        # Under the same condition: a ref renewed meanwhile (a put) stays.
        await db.payload_refs.delete_one({**old, "_id": ref["_id"]})
    payloads = 0
    for key in sorted({ref["key"] for ref in found}):
        payloads += await _delete_if_unused(db, key)
    return FiringRefsDeleted(len(found), payloads)


async def adopt_older_firing_refs(db: AsyncDatabase[Doc], limit: int) -> int:
    """`Store.adopt_older_firing_refs`: an older worker wrote neither `holder` nor
    `made_at`."""
    older: Doc = {"run_id": FIRING_ID, "holder": {"$in": [None, str(PayloadHolder.RUN)]}}
    found = await db.payload_refs.find(older, {"run_id": 1}).limit(limit).to_list()
    ids = sorted({ref["run_id"] for ref in found})
    runs = set(await db.runs.distinct("_id", {"_id": {"$in": ids}}))
    made_at = iso_utc(datetime.now(UTC))
    adopted = 0
    for ref in found:
        if ref["run_id"] not in runs:
            # Under the same condition: a put that set its holder meanwhile has the say.
            done = await db.payload_refs.update_one(
                {**older, "_id": ref["_id"]},
                {"$set": {"holder": str(PayloadHolder.FIRING), "made_at": made_at}},
            )
            adopted += done.modified_count
    return adopted


async def end_schedule_payloads(db: AsyncDatabase[Doc], workflow_id: str) -> None:
    """A deleted schedule's own references become a firing's, made now."""
    await hand_over_payloads(db, [workflow_id])


async def replace_schedule_payloads(
    db: AsyncDatabase[Doc], workflow_id: str, keep: Sequence[str], made_before: datetime
) -> None:
    """An updated schedule's argument it no longer carries becomes a firing's, made now
    (`Store.replace_schedule_payloads`)."""
    now = iso_utc(datetime.now(UTC))
    await db.payload_refs.update_many(
        {"run_id": workflow_id, "key": {"$in": list(keep)}},
        {"$set": {"holder": str(PayloadHolder.SCHEDULE), "made_at": now}},
    )
    await db.payload_refs.update_many(
        {
            "run_id": workflow_id,
            "holder": str(PayloadHolder.SCHEDULE),
            "made_at": {"$lt": iso_utc(made_before)},
            "key": {"$nin": list(keep)},
        },
        {"$set": {"holder": str(PayloadHolder.FIRING), "made_at": now}},
    )


async def hand_over_payloads(db: AsyncDatabase[Doc], run_ids: list[str]) -> None:
    """These workflows' references become firings', made now: the sweep deletes them once
    Temporal has closed each (a deleted workflow's run may still be closing)."""
    await db.payload_refs.update_many(
        {"run_id": {"$in": run_ids}},
        {"$set": {"holder": str(PayloadHolder.FIRING), "made_at": iso_utc(datetime.now(UTC))}},
    )


async def delete_unused_payloads(db: AsyncDatabase[Doc], run_ids: list[str]) -> int:
    """Drop these runs' references and the payloads no other run (nor KEPT) refers to; how
    many payloads went."""
    if not run_ids:
        return 0
    keys = await db.payload_refs.distinct("key", {"run_id": {"$in": run_ids}})
    await db.payload_refs.delete_many({"run_id": {"$in": run_ids}})
    deleted = 0
    for key in keys:
        deleted += await _delete_if_unused(db, key)
    return deleted


async def _delete_if_unused(db: AsyncDatabase[Doc], key: str) -> bool:
    if await _referred(db, key):
        return False
    head = await db.payload_heads.find_one({"_id": key})
    if head is None:
        return False
    taken = await db.payload_heads.delete_one({"_id": key, "gen": head["gen"]})
    if taken.deleted_count == 0:
        return False  # another delete took it
    if await _referred(db, key):
        # A put came meanwhile and may have read this head: it stays.
        await db.payload_heads.update_one(
            {"_id": key}, {"$setOnInsert": {"gen": head["gen"]}}, upsert=True
        )
        return False
    await db.payloads.delete_many({"key": key, "gen": head["gen"]})
    return True


async def _referred(db: AsyncDatabase[Doc], key: str) -> bool:
    return await db.payload_refs.find_one({"key": key}, {"_id": 1}) is not None
