"""Schedules' fire-now requests on MongoDB (`Store.record_schedule_fire`): one document
each in `schedule_fires`, the caller's identity as JSON text (as SQLite keeps it); a claim
is one `find_one_and_update`, so of two firings one takes it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import DESCENDING, ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from activities.store.base import FIRE_REQUESTS_KEPT
from activities.store.documents import iso_utc
from temporal_workflows.contracts import Identity

Doc = dict[str, Any]


async def record_schedule_fire(
    db: AsyncDatabase[Doc], schedule_id: str, requested_by: Identity, requested_at: datetime
) -> None:
    await db.schedule_fires.delete_many(
        {
            "schedule_id": schedule_id,
            "requested_at": {"$lt": iso_utc(requested_at - FIRE_REQUESTS_KEPT)},
        }
    )
    await db.schedule_fires.insert_one(
        {
            "schedule_id": schedule_id,
            "requested_at": iso_utc(requested_at),
            "requested_by": requested_by.model_dump_json(),
            "claimed_by": None,
        }
    )


async def claim_schedule_fire(
    db: AsyncDatabase[Doc], schedule_id: str, firing_id: str, since: datetime, until: datetime
) -> Identity | None:
    doc = await db.schedule_fires.find_one({"schedule_id": schedule_id, "claimed_by": firing_id})
    if doc is None:
        doc = await db.schedule_fires.find_one_and_update(
            {
                "schedule_id": schedule_id,
                "claimed_by": None,
                "requested_at": {"$gte": iso_utc(since), "$lt": iso_utc(until)},
            },
            {"$set": {"claimed_by": firing_id}},
            sort=[("requested_at", DESCENDING), ("_id", DESCENDING)],
            return_document=ReturnDocument.AFTER,
        )
    if doc is None:
        return None
    return Identity.model_validate_json(doc["requested_by"])
