"""The production store: MongoDB through PyMongo's async API (`AsyncMongoClient`, not Motor).

Documents are the records' snake_case documents with `_id` = the record id. Datetimes are kept
as the same fixed-width ISO 8601 UTC text as in SQLite: it sorts in time order and, unlike a BSON
date (milliseconds), round-trips microseconds. Writes that race are guarded by `rev` filters.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import bson
from bson.errors import BSONError
from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import (
    ConfigurationError,
    ConnectionFailure,
    DuplicateKeyError,
    PyMongoError,
)

from activities.store import mongo_a2a_tasks, mongo_apart, mongo_fires
from activities.store.access import LEGACY_OWNER, Grant, WorkflowAccess, viewer_principals
from activities.store.base import (
    ChangedMeanwhile,
    DuplicateNameError,
    PayloadHolder,
    ReadTooLarge,
    StoreError,
    StoreUnavailable,
    StoreUrlInvalid,
    Viewer,
)
from activities.store.documents import (
    M,
    carries_start,
    event_document,
    event_keys_for,
    from_stored,
    iso_utc,
    merged_node_run,
    start_missed,
    stored_run_changes,
    to_stored,
)
from activities.store.executions import (
    NODE_RUN_END_FIELDS,
    RUN_END_FIELDS,
    node_run_base,
    taken_over,
    verdict,
)
from activities.store.mongo_payloads import (
    adopt_older_firing_refs,
    delete_firing_payloads,
    delete_unused_payloads,
    end_schedule_payloads,
    firing_payload_holders,
    hand_over_payloads,
    put_payload,
    replace_schedule_payloads,
)
from activities.store.mongo_values import (
    JSON_FIELD,
    from_bson_safe,
    update_bson_safe,
    write_bson_safe,
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
    VersionSummary,
    WorkflowRecord,
    WorkflowVersionRecord,
)
from activities.store.search_text import search_fold
from temporal_workflows.contracts import Identity
from temporal_workflows.read_model import (
    START_CLAIM_REV,
    TERMINAL_RUN_STATUSES,
    WORKFLOW_REVS_BELOW,
)

Doc = dict[str, Any]
# A workflow's ACL, and the principals that may VIEW it (kept beside it for filtered lists).
_ACL_FIELDS = frozenset({"owner", "grants", "viewers"})
# Set anew by every write of a node run: a merge writes only over the document it read.
WRITE_TOKEN = "_write"
# Reads and merges of one node run before giving up (each miss: another write landed).
MERGE_TRIES = 20
# Kept beside a workflow for search; a workflow folded by an older rule is folded again.
SEARCH_FOLD_VERSION = 1

# (collection, keys, options): one index per query the store makes.
_INDEXES: list[tuple[str, list[tuple[str, int]], dict[str, Any]]] = [
    ("workflows", [("name", ASCENDING)], {"unique": True, "name": "name_unique"}),
    ("workflows", [("updated_at", DESCENDING), ("_id", DESCENDING)], {}),
    ("workflows", [("viewers", ASCENDING)], {}),
    ("workflow_versions", [("workflow_id", ASCENDING), ("version", ASCENDING)], {"unique": True}),
    ("runs", [("started_at", DESCENDING), ("_id", DESCENDING)], {}),
    ("runs", [("workflow_definition_id", ASCENDING), ("started_at", DESCENDING)], {}),
    # A workflow's runs in one status (a status filter, as SQLite's index of them).
    (
        "runs",
        [("workflow_definition_id", ASCENDING), ("status", ASCENDING), ("started_at", DESCENDING)],
        {},
    ),
    ("runs", [("status", ASCENDING), ("started_at", ASCENDING)], {}),
    ("runs", [("parent_run_id", ASCENDING), ("started_at", DESCENDING)], {}),
    ("runs", [("idempotency_key", ASCENDING)], {}),
    # A page of one schedule's runs; only runs a schedule started are in it.
    (
        "runs",
        [("schedule_id", ASCENDING), ("started_at", DESCENDING)],
        {"partialFilterExpression": {"schedule_id": {"$type": "string"}}},
    ),
    ("node_runs", [("workflow_run_id", ASCENDING), ("started_at", ASCENDING)], {}),
    ("payloads", [("key", ASCENDING), ("index", ASCENDING)], {}),
    ("payload_refs", [("run_id", ASCENDING)], {}),
    ("payload_refs", [("key", ASCENDING)], {}),
    ("payload_refs", [("holder", ASCENDING), ("made_at", ASCENDING)], {}),
    ("events", [("run_id", ASCENDING), ("_id", ASCENDING)], {}),
    ("schedule_fires", [("schedule_id", ASCENDING), ("requested_at", DESCENDING)], {}),
    # The abandoned-task sweep reads the unclaimed tasks oldest first.
    ("a2a_tasks", [("noted_at", ASCENDING), ("_id", ASCENDING)], {}),
    # A keyed event is logged once per run (see `append_event`); unkeyed ones are not
    # indexed, so they are never taken for repeats (SQLite's NULLs are distinct alike).
    (
        "events",
        [("run_id", ASCENDING), ("key", ASCENDING)],
        {
            "unique": True,
            "partialFilterExpression": {"key": {"$exists": True}},
            "name": "run_key_unique",
        },
    ),
]


class MongoStore:
    """`Store` on one MongoDB database; no multi-document transactions needed."""

    ids_visible_in_order = False

    def __init__(
        self,
        url: str,
        database: str = "trellis",
        server_selection_timeout_ms: int = 5_000,
        *,
        client_class: Callable[..., AsyncMongoClient[Doc]] = AsyncMongoClient,
    ) -> None:
        """`client_class`: what makes the client; the tests pass a named fake there on a
        machine where no MongoDB server can run (tests/support/fake_mongo.py)."""
        self.url = url
        self.database_name = database
        self._timeout_ms = server_selection_timeout_ms
        self._client_class = client_class
        self._client: AsyncMongoClient[Doc] | None = None

    # -- lifecycle -----------------------------------------------------------
    async def connect(self) -> None:
        """Create the client and every index (idempotent; `trellis setup` calls it too)."""
        try:
            self._client = self._new_client()
            with _errors():
                for collection, keys, options in _INDEXES + mongo_apart.INDEXES:
                    await self._db()[collection].create_index(keys, **options)
                # Workflows from before ACLs belong to the dev-mode caller, the only one.
                await self._db().workflows.update_many(
                    {"owner": {"$exists": False}},
                    {"$set": {"owner": LEGACY_OWNER, "grants": [], "viewers": ["user:dev"]}},
                )
                await self._fold_unfolded_workflows()
        except StoreError:
            await self.close()
            raise

    def _new_client(self) -> Any:
        """The driver's client; StoreUrlInvalid when it cannot parse the URL (an unescaped
        `/` or `@` in the password, a port that is no number, an unknown option): PyMongo
        says so with a ValueError or a ConfigurationError (InvalidURI is one)."""
        try:
            return self._client_class(self.url, serverSelectionTimeoutMS=self._timeout_ms)
        except (ValueError, ConfigurationError) as exc:
            raise StoreUrlInvalid(f"not a MongoDB URL PyMongo can use: {exc}") from exc

    async def _fold_unfolded_workflows(self) -> None:
        """Workflows saved before search compared folded text get it (search_text.py)."""
        unfolded = await (
            self._db()
            .workflows.find(
                {"search_fold_version": {"$ne": SEARCH_FOLD_VERSION}},
                projection={"name": True, "description": True},
            )
            .to_list()
        )
        for doc in unfolded:
            # Only over the text read, still unfolded: a save landing since the read folded
            # its own (another API may be saving while this one connects).
            unchanged = {"name": doc.get("name"), "description": doc.get("description")}
            await self._db().workflows.update_one(
                {"_id": doc["_id"], "search_fold_version": {"$ne": SEARCH_FOLD_VERSION}}
                | unchanged,
                {"$set": _search_fields(doc.get("name"), doc.get("description"))},
            )

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def ping(self) -> None:
        with _errors():
            await self._db().command("ping")

    def _db(self) -> AsyncDatabase[Doc]:
        if self._client is None:
            raise StoreError("MongoDB store is not connected")
        return self._client[self.database_name]

    # -- definitions ---------------------------------------------------------
    async def create_workflow(self, record: WorkflowRecord) -> None:
        viewers = viewer_principals(record.owner, record.grants)
        with _errors():
            await write_bson_safe(
                self._db().workflows.insert_one,
                {
                    "_id": record.id,
                    **to_stored(record),
                    "viewers": viewers,
                    **_search_fields(record.name, record.description),
                },
            )
            await self._put_version(record)

    async def get_workflow(self, workflow_id: str) -> WorkflowRecord | None:
        with _errors():
            doc = await self._db().workflows.find_one({"_id": workflow_id})
        return None if doc is None else _record(WorkflowRecord, doc)

    async def get_workflow_access(self, workflow_id: str) -> WorkflowAccess | None:
        with _errors():
            doc = await self._db().workflows.find_one(
                {"_id": workflow_id}, projection={"owner": True, "grants": True}
            )
        return None if doc is None else WorkflowAccess.model_validate({**doc, "id": doc["_id"]})

    async def list_workflows(
        self, query: str | None, page: int, per_page: int, viewer: Viewer = None
    ) -> tuple[list[WorkflowRecord], int]:
        filter_: Doc = {}
        if query:
            # Folded text on both sides, as SQLite compares (search_text.py).
            pattern = {"$regex": _literal_pattern(search_fold(query))}
            filter_ = {"$or": [{"name_fold": pattern}, {"description_fold": pattern}]}
        if viewer is not None:
            filter_["viewers"] = {"$in": sorted(viewer)}
        with _errors():
            total = await self._db().workflows.count_documents(filter_)
            cursor = (
                self._db()
                .workflows.find(filter_)
                .sort([("updated_at", DESCENDING), ("_id", DESCENDING)])
                .skip((page - 1) * per_page)
                .limit(per_page)
            )
            docs = await cursor.to_list()
        return [_record(WorkflowRecord, d) for d in docs], total

    async def update_workflow(
        self, record: WorkflowRecord, new_version: bool, *, read: WorkflowRecord | None = None
    ) -> None:
        # $set everything but the ACL: only set_workflow_grants changes owner and grants.
        fields = {k: v for k, v in to_stored(record).items() if k not in _ACL_FIELDS}
        fields |= _search_fields(record.name, record.description)
        filter_: dict[str, Any] = {"_id": record.id}
        if read is not None:
            # Filtered on the record as read: a save landing in between matches nothing.
            stored = to_stored(read)
            filter_ |= {k: stored[k] for k in ("updated_at", "version", "enabled")}
        with _errors():
            result = await update_bson_safe(
                lambda update: self._db().workflows.update_one(filter_, update), fields
            )
            if not result.matched_count and read is not None:
                raise ChangedMeanwhile(f"workflow {record.id} changed since it was read")
            if result.matched_count and new_version:
                await self._put_version(record)

    async def set_workflow_grants(
        self, workflow_id: str, grants: list[Grant], *, read: list[Grant] | None = None
    ) -> bool:
        with _errors():
            doc = await self._db().workflows.find_one(
                {"_id": workflow_id}, {"owner": 1, "grants": 1}
            )
            if doc is None:
                return False
            owner = doc.get("owner", LEGACY_OWNER)
            held = doc.get("grants")
            if read is not None and [Grant.model_validate(g) for g in held or []] != read:
                raise ChangedMeanwhile(f"the grants of workflow {workflow_id} changed")
            # Written only over the grants just compared: a write landing in between is
            # not overwritten (no document matches, below).
            unchanged = {"grants": held} if held is not None else {"grants": {"$exists": False}}
            result = await self._db().workflows.update_one(
                {"_id": workflow_id, **(unchanged if read is not None else {})},
                {
                    "$set": {
                        "owner": owner,
                        "grants": [g.model_dump(mode="json", by_alias=False) for g in grants],
                        "viewers": viewer_principals(owner, grants),
                    }
                },
            )
            if result.matched_count == 0 and read is not None:
                if await self._db().workflows.find_one({"_id": workflow_id}, {"_id": 1}):
                    raise ChangedMeanwhile(f"the grants of workflow {workflow_id} changed")
        return result.matched_count == 1

    async def delete_workflow(self, workflow_id: str) -> bool:
        db = self._db()
        with _errors():
            # Children first: an interrupted delete leaves the definition, so it can be retried.
            run_ids = await db.runs.distinct("_id", {"workflow_definition_id": workflow_id})
            await db.events.delete_many({"run_id": {"$in": run_ids}})
            await db.node_runs.delete_many({"workflow_run_id": {"$in": run_ids}})
            # Not deleted at once: a run may still be closing in Temporal (sqlite.py).
            await hand_over_payloads(db, run_ids)
            await db.runs.delete_many({"workflow_definition_id": workflow_id})
            await mongo_apart.delete_for_runs(db, run_ids)
            # Again: a put that found its run still there wrote its reference before
            # (mongo_payloads.py `_swept_if_run_gone`).
            await hand_over_payloads(db, run_ids)
            await db.workflow_versions.delete_many({"workflow_id": workflow_id})
            result = await db.workflows.delete_one({"_id": workflow_id})
        return result.deleted_count > 0

    async def delete_ended_runs(self, ended_before: datetime, limit: int) -> EndedRunsDeleted:
        db = self._db()
        cutoff = iso_utc(ended_before)
        # A run ends after it starts: the (status, started_at) index narrows the look.
        due: Doc = {
            "status": {"$in": sorted(TERMINAL_RUN_STATUSES)},
            "started_at": {"$lt": cutoff},
            "$or": [
                {"finished_at": {"$lt": cutoff}},
                {"finished_at": None, "updated_at": {"$lt": cutoff}},
            ],
        }
        with _errors():
            cursor = db.runs.find(due, {"finished_at": 1, "updated_at": 1}).limit(limit)
            found = await cursor.to_list()
            if not found:
                return EndedRunsDeleted(0, 0, None)
            ids = [doc["_id"] for doc in found]
            # The runs first, under the same condition (a racing sweep's count stays right),
            # then the children and payloads of those gone only: a run reopened meanwhile
            # (run_start.py `_reopen`) stays whole. One cut short between leaves the gone
            # runs' children behind, never a kept run without its payloads.
            result = await db.runs.delete_many({**due, "_id": {"$in": ids}})
            kept = set(await db.runs.distinct("_id", {"_id": {"$in": ids}}))
            gone = [run_id for run_id in ids if run_id not in kept]
            await db.events.delete_many({"run_id": {"$in": gone}})
            await db.node_runs.delete_many({"workflow_run_id": {"$in": gone}})
            await mongo_apart.delete_for_runs(db, gone)
            payloads = await delete_unused_payloads(db, gone)
        ends = [doc.get("finished_at") or doc.get("updated_at") for doc in found]
        oldest = min((str(end) for end in ends if end), default=None)
        return EndedRunsDeleted(
            len(found),
            result.deleted_count,
            None if oldest is None else datetime.fromisoformat(oldest),
            more=len(found) == limit,
            payloads=payloads,
        )

    async def get_workflow_version(
        self, workflow_id: str, version: int
    ) -> WorkflowVersionRecord | None:
        with _errors():
            doc = await self._db().workflow_versions.find_one(
                {"workflow_id": workflow_id, "version": version}
            )
        return None if doc is None else _record(WorkflowVersionRecord, doc)

    async def list_workflow_versions(self, workflow_id: str) -> list[VersionSummary]:
        with _errors():
            cursor = self._db().workflow_versions.find({"workflow_id": workflow_id})
            docs = await cursor.sort("version", ASCENDING).to_list()
        return [VersionSummary.of(_record(WorkflowVersionRecord, d)) for d in docs]

    async def _put_version(self, record: WorkflowRecord) -> None:
        version = WorkflowVersionRecord(
            workflow_id=record.id,
            version=record.version,
            definition=record.spec(),
            created_at=record.updated_at,
            created_by=record.saved_by,
        )
        key = f"{record.id}/{record.version}"
        await write_bson_safe(
            lambda doc: self._db().workflow_versions.replace_one({"_id": key}, doc, upsert=True),
            {"_id": key, **to_stored(version)},
        )

    # -- runs ----------------------------------------------------------------
    async def insert_run(self, record: RunRecord) -> RunRecord:
        db = self._db()
        with _errors():
            doc, refs = await mongo_apart.split(db, "runs", record.id, to_stored(record))
            try:
                await write_bson_safe(
                    db.runs.insert_one, mongo_apart.with_refs({"_id": record.id, **doc}, refs)
                )
                return record  # inserted: as on SQLite, the caller's record itself
            except DuplicateKeyError:
                pass  # already inserted (a retried activity): return what is stored
            await mongo_apart.drop(db, refs.values())  # not written: its own chunks go
            stored = await self._read("runs", {"_id": record.id})
        if not stored:
            raise StoreError(f"run {record.id} vanished right after insert")
        return _record(RunRecord, stored[0])

    async def delete_unstarted_run(self, run_id: str) -> bool:
        db = self._db()
        unstarted: Doc = {"_id": run_id, "status": "pending", "rev": {"$lte": START_CLAIM_REV}}
        with _errors():
            # The run first, under its condition: its children go only if it did (a
            # never-started run has none; a workflow's first write keeps it whole).
            result = await db.runs.delete_one(unstarted)
            if result.deleted_count == 0:
                return False
            await db.events.delete_many({"run_id": run_id})
            await db.node_runs.delete_many({"workflow_run_id": run_id})
            await mongo_apart.delete_for_runs(db, [run_id])
            await delete_unused_payloads(db, [run_id])
        return True

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
        applied = await self._update_run(run_id, rev, changes, newer_only, ending)
        if applied and event is not None:
            await self.append_event(run_id, event, event_key)
        return applied

    async def merge_node_run(
        self,
        fields: dict[str, Any],
        events: Sequence[dict[str, Any]] = (),
        event_keys: Sequence[str | None] = (),
    ) -> bool:
        keys = event_keys_for(events, event_keys)
        # No multi-document transaction needed: the write is made only over the document
        # read (its write token), so a write landing in between is merged with, not lost
        # (read and merged again); events are only appended after the write applied.
        for _ in range(MERGE_TRIES):
            written = await self._merge_once(fields)
            if written is None:
                continue  # another write landed since the read
            if not written:
                return False
            for event, key in zip(events, keys, strict=True):
                await self.append_event(written, event, key)
            return True
        raise StoreError(f"node run {fields['id']} kept changing while it was merged")

    async def _merge_once(self, fields: dict[str, Any]) -> str | None:
        """One read, merge and write of `merge_node_run`: the node run's run id when
        applied, "" when refused, None when another write landed since the read (then
        nothing was written)."""
        db = self._db()
        with _errors():
            doc = await db.node_runs.find_one({"_id": fields["id"]})
        read_token = None if doc is None else doc.get(WRITE_TOKEN)
        before = from_bson_safe(doc) if doc else None
        writer = fields.get("execution")
        told = verdict(before, writer)
        if told == "stale":
            return ""  # a late write of an execution the run has gone on from
        if told == "takeover":
            assert before is not None and writer is not None
            merged = merged_node_run(node_run_base(before), fields) | taken_over(before, writer)
        else:
            merged = merged_node_run(before, fields)
        record = from_stored(NodeRunRecord, merged)
        if doc is None:
            # A node run new to the store needs its run there: one deleted with its
            # workflow (its node runs too) takes no late writes of its steps.
            if not await self._run_exists(record.workflow_run_id):
                return ""
        elif told == "revs" and doc["rev"] > record.rev:  # as `upsert_node_run` refuses it
            await self._fill_missed_start(fields)
            return ""
        # Fields kept apart that this write does not set stay where they are.
        # A node run taken over drops its old end, kept apart or not.
        dropped = [*fields, *(NODE_RUN_END_FIELDS if told == "takeover" else ())]
        kept = {name: ref for name, ref in mongo_apart.refs_of(doc).items() if name not in dropped}
        written = {name: v for name, v in to_stored(record).items() if name not in kept}
        with _errors():
            plain, refs = await mongo_apart.split(db, "node_runs", record.workflow_run_id, written)
            new = {"_id": record.id, **plain, WRITE_TOKEN: uuid.uuid4().hex}
            new = mongo_apart.with_refs(new, kept | refs)
            if doc is None:
                try:
                    await write_bson_safe(db.node_runs.insert_one, new)
                except DuplicateKeyError:
                    await mongo_apart.drop(db, refs.values())
                    return None  # another write made it meanwhile
                return record.workflow_run_id
            unchanged = {"_id": record.id, WRITE_TOKEN: read_token}
            result = await write_bson_safe(
                lambda doc: db.node_runs.replace_one(unchanged, doc), new
            )
            if not result.matched_count:
                await mongo_apart.drop(db, refs.values())
                return None
            await mongo_apart.drop(db, mongo_apart.replaced(doc, dropped))
        return record.workflow_run_id

    async def _fill_missed_start(self, fields: dict[str, Any]) -> None:
        """A refused write's attempt start, into a stored node run that shows none
        (`start_missed`); its status, rev and the rest stay as stored."""
        if not carries_start(fields):
            return  # nothing to fill: spare the read
        db = self._db()
        with _errors():
            # Read again: the newer write that refused this one may have landed after the
            # merge's read (its upsert then collided).
            doc = await db.node_runs.find_one({"_id": fields["id"]})
        stored = from_bson_safe(doc) if doc else None
        # A field kept apart is there (not None), though not read back here.
        there = {name: True for name in mongo_apart.refs_of(doc)}
        missed = start_missed(None if stored is None else stored | there, fields)
        if stored is None or not missed:
            return
        filled = to_stored(from_stored(NodeRunRecord, {**stored, **missed}))
        # Only over what was read: a write landing meanwhile keeps what it wrote.
        guard = {"_id": fields["id"], "rev": stored["rev"], "attempt": stored.get("attempt")}
        guard.update({name: None for name in missed if name != "attempt"})
        guard[WRITE_TOKEN] = stored.get(WRITE_TOKEN)
        with _errors():
            plain, refs = await mongo_apart.split(
                db, "node_runs", stored["workflow_run_id"], {name: filled[name] for name in missed}
            )
            result = await update_bson_safe(
                lambda update: db.node_runs.update_one(
                    guard, mongo_apart.with_refs_set(update, "node_runs", plain, refs)
                ),
                plain | {WRITE_TOKEN: uuid.uuid4().hex},
            )
            if not result.matched_count:
                await mongo_apart.drop(db, refs.values())

    async def _run_exists(self, run_id: str) -> bool:
        with _errors():
            return await self._db().runs.find_one({"_id": run_id}, {"_id": 1}) is not None

    async def _update_run(
        self, run_id: str, rev: int, changes: dict[str, Any], newer_only: bool, ending: bool
    ) -> bool:
        # Validated here, $set without reading the run first, guarded by rev: a concurrent
        # writer's other fields survive, and a newer revision is never overwritten (but by
        # an end that differs: `Store.update_run`).
        fields = {**stored_run_changes(changes), "rev": rev}
        db = self._db()
        with _errors():
            filter_: dict[str, Any] = {"_id": run_id, "rev": {"$lt" if newer_only else "$lte": rev}}
            order = changes.get("end_order")
            if ending and "status" in changes and order is not None:
                guard = filter_.pop("rev")
                other_end = {
                    "status": {"$ne": changes["status"]},
                    "rev": {"$lt": WORKFLOW_REVS_BELOW},
                }
                filter_["$or"] = [{"rev": guard}, other_end]
            if order is not None:  # an end never lands over one a later task wrote
                filter_["end_order"] = {"$not": {"$gt": order}}
            if (writer := changes.get("execution")) is not None:
                held = await db.runs.find_one(
                    {"_id": run_id}, projection={"execution": True, "earlier_executions": True}
                )
                told = "revs" if held is None else verdict(held, writer)
                if told == "stale":
                    return False  # a late write of an execution the run has gone on from
                if told == "takeover":
                    assert held is not None
                    # Whatever its revs, over the execution read (none took it over since).
                    filter_ = {"_id": run_id, "execution": held["execution"]}
                    ended = {name: None for name in RUN_END_FIELDS}
                    fields = ended | fields | taken_over(held, writer)
                else:
                    filter_["execution"] = {"$in": [None, writer]}
            plain, refs = await mongo_apart.split(db, "runs", run_id, fields)
            # What it replaced read in the same write: those fields' chunks then go.
            before = await update_bson_safe(
                lambda update: db.runs.find_one_and_update(
                    filter_,
                    mongo_apart.with_refs_set(update, "runs", plain, refs),
                    projection={mongo_apart.APART_FIELD: True},
                ),
                plain,
            )
            if before is None:
                await mongo_apart.drop(db, refs.values())
                return False
            await mongo_apart.drop(db, mongo_apart.replaced(before, fields))
        return True

    async def get_run(self, run_id: str) -> RunRecord | None:
        with _errors():
            found = await self._read("runs", {"_id": run_id})
        return _record(RunRecord, found[0]) if found else None

    async def _read(self, collection: str, filter_: Doc) -> list[Doc]:
        """The one document `filter_` finds (none, or it), its fields apart put back."""
        doc = await self._db()[collection].find_one(filter_)
        if doc is None:
            return []
        return await mongo_apart.resolve_all(self._db(), collection, [doc])

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
        wanted = {
            "workflow_definition_id": workflow_id,
            "status": status,
            "parent_run_id": parent_run_id,
            "schedule_id": schedule_id,
        }
        filter_ = {key: value for key, value in wanted.items() if value is not None}
        with _errors():
            total = await self._db().runs.count_documents(filter_)
            cursor = (
                self._db()
                .runs.find(filter_, projection=_WITHOUT_SNAPSHOT)
                .sort([("started_at", DESCENDING), ("_id", DESCENDING)])
                .skip((page - 1) * per_page)
                .limit(per_page)
            )
            docs = await mongo_apart.resolve_all(
                self._db(), "runs", await cursor.to_list(), _WITHOUT_SNAPSHOT
            )
        return [_record(RunHeader, d) for d in docs], total

    async def list_unstarted_runs(self, started_before: datetime) -> list[RunRecord]:
        filter_ = {"status": "pending", "started_at": {"$lt": iso_utc(started_before)}}
        return await self._find_runs(filter_, limit=0)

    async def list_gated_runs(
        self, status: str, limit: int, viewer: Viewer = None
    ) -> list[GatedRun]:
        if limit <= 0:  # as in SQLite; MongoDB would read limit(0) as "no limit"
            return []
        # `.0` exists: the list of open gates is not empty; one kept as text is never
        # empty (mongo_values.py: only a value BSON cannot hold is).
        filter_: Doc = {
            "status": status,
            "$or": [
                {"pending_requirements.0": {"$exists": True}},
                {f"{JSON_FIELD}.pending_requirements": {"$exists": True}},
            ],
        }
        if viewer is not None:
            with _errors():
                visible = await self._db().workflows.distinct(
                    "_id", {"viewers": {"$in": sorted(viewer)}}
                )
            filter_["workflow_definition_id"] = {"$in": visible}
        return [GatedRun.of(run) for run in await self._find_runs(filter_, limit=limit)]

    async def _find_runs(self, filter_: Doc, limit: int) -> list[RunRecord]:
        """Runs matching a filter, oldest first; `limit` 0 means all."""
        with _errors():
            cursor = (
                self._db()
                .runs.find(filter_)
                .sort([("started_at", ASCENDING), ("_id", ASCENDING)])
                .limit(limit)
            )
            docs = await mongo_apart.resolve_all(self._db(), "runs", await cursor.to_list())
        return [_record(RunRecord, d) for d in docs]

    # -- node runs -----------------------------------------------------------
    async def upsert_node_run(self, record: NodeRunRecord) -> bool:
        db = self._db()
        filter_ = {"_id": record.id, "rev": {"$lte": record.rev}}
        with _errors():
            plain, refs = await mongo_apart.split(
                db, "node_runs", record.workflow_run_id, to_stored(record)
            )
            new = {"_id": record.id, **plain, WRITE_TOKEN: uuid.uuid4().hex}
            try:
                # What it replaced read in the same write: its chunks then go.
                before = await write_bson_safe(
                    lambda doc: db.node_runs.find_one_and_replace(
                        filter_, doc, upsert=True, projection={mongo_apart.APART_FIELD: True}
                    ),
                    mongo_apart.with_refs(new, refs),
                )
            except DuplicateKeyError:
                # The filter missed because a newer rev is stored; the upsert then collides.
                await mongo_apart.drop(db, refs.values())
                return False
            await mongo_apart.drop(db, mongo_apart.refs_of(before).values())
        return True

    async def list_node_runs(
        self, run_ids: list[str], max_bytes: int | None = None
    ) -> list[NodeRunRecord]:
        if not run_ids:
            return []
        with _errors():
            cursor = self._db().node_runs.find({"workflow_run_id": {"$in": run_ids}})
            docs = await _bounded(cursor, max_bytes)
            docs = await mongo_apart.resolve_all(self._db(), "node_runs", docs)
        # MongoDB sorts nulls first; unstarted node runs belong last, so order here.
        docs.sort(key=lambda d: (d.get("started_at") is None, d.get("started_at") or "", d["_id"]))
        return [_record(NodeRunRecord, d) for d in docs]

    async def node_run_page(
        self, run_id: str, offset: int, limit: int, max_bytes: int | None = None
    ) -> tuple[list[NodeRunRecord], int]:
        with _errors():
            node_runs = self._db().node_runs
            total = await node_runs.count_documents({"workflow_run_id": run_id})
            # Unstarted node runs last, as in list_node_runs (MongoDB sorts nulls first).
            cursor = await node_runs.aggregate(
                [
                    {"$match": {"workflow_run_id": run_id}},
                    {
                        "$addFields": {
                            "_unstarted": {"$eq": [{"$ifNull": ["$started_at", None]}, None]}
                        }
                    },
                    {"$sort": {"_unstarted": 1, "started_at": 1, "_id": 1}},
                    {"$skip": offset},
                    {"$limit": limit},
                    {"$project": {"_unstarted": 0}},
                ]
            )
            docs = await _bounded(cursor, max_bytes)
            docs = await mongo_apart.resolve_all(self._db(), "node_runs", docs)
        return [_record(NodeRunRecord, d) for d in docs], total

    async def node_run_counts_of(self, run_ids: list[str]) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {run_id: {} for run_id in run_ids}
        if not run_ids:
            return counts
        with _errors():
            cursor = await self._db().node_runs.aggregate(
                [
                    {"$match": {"workflow_run_id": {"$in": run_ids}}},
                    {
                        "$group": {
                            "_id": {"run": "$workflow_run_id", "status": "$status"},
                            "count": {"$sum": 1},
                        }
                    },
                ]
            )
            groups = await cursor.to_list()
        for group in groups:
            counts[group["_id"]["run"]][str(group["_id"]["status"])] = int(group["count"])
        return counts

    async def get_node_run(self, node_run_id: str) -> NodeRunRecord | None:
        with _errors():
            found = await self._read("node_runs", {"_id": node_run_id})
        return _record(NodeRunRecord, found[0]) if found else None

    # -- change counters ------------------------------------------------------
    # Not kept on MongoDB: every read there is answered afresh.
    async def run_changes(self, run_id: str) -> int | None:
        return None

    async def workflow_run_changes(self, workflow_id: str) -> int | None:
        return None

    async def run_was_deleted(self, run_id: str) -> bool:
        return False

    # -- large payloads (mongo_payloads.py) ----------------------------------
    async def put_payload(
        self,
        key: str,
        data: bytes,
        run_id: str | None = None,
        holder: PayloadHolder = PayloadHolder.RUN,
    ) -> None:
        with _errors():
            await put_payload(self._db(), key, data, run_id, holder)

    async def firing_payload_holders(
        self, made_before: datetime, after: str, limit: int
    ) -> list[str]:
        with _errors():
            return await firing_payload_holders(self._db(), made_before, after, limit)

    async def delete_firing_payloads(
        self, made_before: datetime, limit: int, workflow_ids: Sequence[str] | None = None
    ) -> FiringRefsDeleted:
        with _errors():
            return await delete_firing_payloads(self._db(), made_before, limit, workflow_ids)

    async def adopt_older_firing_refs(self, limit: int) -> int:
        with _errors():
            return await adopt_older_firing_refs(self._db(), limit)

    async def end_schedule_payloads(self, workflow_id: str) -> None:
        with _errors():
            await end_schedule_payloads(self._db(), workflow_id)

    async def replace_schedule_payloads(
        self, workflow_id: str, keep: Sequence[str], made_before: datetime
    ) -> None:
        with _errors():
            await replace_schedule_payloads(self._db(), workflow_id, keep, made_before)

    async def get_payload(self, key: str) -> bytes | None:
        with _errors():
            cursor = self._db().payloads.find({"key": key}).sort("index", ASCENDING)
            docs = await cursor.to_list()
        if not docs or len(docs) != docs[0]["count"]:
            return None  # absent, or still being written
        return b"".join(bytes(d["data"]) for d in docs)

    async def append_event(self, run_id: str, event: dict[str, Any], key: str | None = None) -> int:
        doc = event_document(event)
        stored: Doc = {"run_id": run_id, "event": doc}
        if key is not None:
            stored["key"] = key  # absent, not null, when unkeyed: the unique index skips it
        with _errors():
            counter = await self._db().counters.find_one_and_update(
                {"_id": "events"},
                {"$inc": {"seq": 1}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
            if counter is None:  # cannot happen with upsert + AFTER; keeps the types honest
                raise StoreError("the event counter was not returned")
            event_id = int(counter["seq"])
            try:
                await write_bson_safe(self._db().events.insert_one, {"_id": event_id, **stored})
            except DuplicateKeyError:
                # Logged before under this key (a batch written again): keep the first. The
                # id taken is skipped; ids stay monotonic.
                if key is None:
                    raise
                first = await self._db().events.find_one(
                    {"run_id": run_id, "key": key}, projection={"_id": True}
                )
                if first is None:
                    raise
                return int(first["_id"])
        return event_id

    async def list_events(self, run_id: str, after_id: int, limit: int) -> list[dict[str, Any]]:
        with _errors():
            cursor = (
                self._db()
                .events.find({"run_id": run_id, "_id": {"$gt": after_id}})
                .sort("_id", ASCENDING)
                .limit(limit)
            )
            docs = await cursor.to_list()
        return [{**from_bson_safe(d)["event"], "id": d["_id"]} for d in docs]

    async def last_event_id(self, run_id: str) -> int:
        with _errors():
            cursor = (
                self._db()
                .events.find({"run_id": run_id}, {"_id": 1})
                .sort("_id", DESCENDING)
                .limit(1)
            )
            newest = await cursor.to_list()
        return int(newest[0]["_id"]) if newest else 0

    async def delete_events(self, run_id: str) -> None:
        with _errors():
            await self._db().events.delete_many({"run_id": run_id})

    # -- schedules' fire-now requests (mongo_fires.py) ------------------------
    async def record_schedule_fire(
        self, schedule_id: str, requested_by: Identity, requested_at: datetime
    ) -> None:
        with _errors():
            await mongo_fires.record_schedule_fire(
                self._db(), schedule_id, requested_by, requested_at
            )

    async def claim_schedule_fire(
        self, schedule_id: str, firing_id: str, since: datetime, until: datetime
    ) -> Identity | None:
        with _errors():
            return await mongo_fires.claim_schedule_fire(
                self._db(), schedule_id, firing_id, since, until
            )

    async def delete_schedule_fires(self, schedule_id: str) -> None:
        with _errors():
            await self._db().schedule_fires.delete_many({"schedule_id": schedule_id})

    # -- tasks A2A steps started (mongo_a2a_tasks.py) -------------------------
    async def record_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        with _errors():
            await mongo_a2a_tasks.record_a2a_task(self._db(), task, at)

    async def follow_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        with _errors():
            await mongo_a2a_tasks.follow_a2a_task(self._db(), task, at)

    async def settle_a2a_task(self, task: A2ATaskRef, now: datetime) -> bool:
        with _errors():
            return await mongo_a2a_tasks.settle_a2a_task(self._db(), task, now)

    async def claim_abandoned_a2a_tasks(
        self, now: datetime, lease: timedelta, limit: int, *, followed_before: datetime
    ) -> list[AbandonedA2ATask]:
        with _errors():
            return await mongo_a2a_tasks.claim_abandoned_a2a_tasks(
                self._db(), now, lease, limit, followed_before
            )

    async def release_a2a_task(self, task: A2ATaskRef, failed_at: datetime) -> None:
        with _errors():
            await mongo_a2a_tasks.release_a2a_task(self._db(), task, failed_at)

    async def forget_a2a_task(self, task: A2ATaskRef) -> None:
        with _errors():
            await mongo_a2a_tasks.forget_a2a_task(self._db(), task)

    async def watch_event_runs(self) -> AsyncIterator[set[str]]:
        # One change stream on the events collection (MongoDB needs a replica set for
        # change streams; a standalone server raises, and live streams poll instead).
        try:
            stream = await self._db().events.watch(EVENT_INSERTS)
            try:
                yield set()
                async for change in stream:
                    run_id = event_run_id(change)
                    if run_id is not None:
                        yield {run_id}
            finally:
                await stream.close()
        except (PyMongoError, BSONError) as exc:
            raise StoreError(f"MongoDB change stream failed: {exc}") from exc


# The change stream's pipeline: inserted events, only the run id of each (and `_id`, the
# resume token, which a change stream must keep).
EVENT_INSERTS: list[Doc] = [
    {"$match": {"operationType": "insert"}},
    {"$project": {"operationType": 1, "fullDocument.run_id": 1}},
]


def event_run_id(change: Doc) -> str | None:
    """The run id of an event insert in a change stream document."""
    run_id = (change.get("fullDocument") or {}).get("run_id")
    return run_id if isinstance(run_id, str) else None


# A list of runs leaves their definition snapshots out, in any form.
_WITHOUT_SNAPSHOT = {
    "definition_snapshot": False,
    f"{JSON_FIELD}.definition_snapshot": False,
    f"{mongo_apart.APART_FIELD}.definition_snapshot": False,
}


def _literal_pattern(text: str) -> str:
    """A $regex matching `text` literally. A NUL is spelled `\\x00`: the server refuses a
    pattern holding the byte itself (BadValue), and re.escape leaves it as it is."""
    return re.escape(text).replace("\x00", "\\x00")


def _search_fields(name: str | None, description: str | None) -> Doc:
    """What search matches a workflow by, kept beside its document (search_text.py)."""
    return {
        "name_fold": search_fold(name or ""),
        "description_fold": search_fold(description or ""),
        "search_fold_version": SEARCH_FOLD_VERSION,
    }


def _record(model: type[M], doc: Doc) -> M:
    """A record from its stored document (fields kept as JSON text read back first)."""
    return from_stored(model, from_bson_safe(doc))


@contextmanager
def _errors() -> Iterator[None]:
    """Driver errors become StoreError; a taken workflow name becomes DuplicateNameError."""
    try:
        yield
    except DuplicateKeyError as exc:
        key_pattern = (exc.details or {}).get("keyPattern") or {}
        if "name" in key_pattern or "name_unique" in str(exc):
            raise DuplicateNameError("a workflow with this name already exists") from exc
        raise StoreError(f"MongoDB store error: {exc}") from exc
    except ConnectionFailure as exc:  # no server reachable, a connection lost mid-operation
        raise StoreUnavailable(f"MongoDB store unavailable: {exc}") from exc
    except (PyMongoError, BSONError, OverflowError) as exc:
        # BSON and OverflowError: a value MongoDB cannot hold (e.g. an integer beyond 64 bits).
        raise StoreError(f"MongoDB store error: {exc}") from exc


async def _bounded(cursor: Any, max_bytes: int | None) -> list[dict[str, Any]]:
    """The cursor's documents; ReadTooLarge as soon as they pass `max_bytes` together (as
    BSON), before the rest are read."""
    if max_bytes is None:
        return list(await cursor.to_list())
    docs: list[dict[str, Any]] = []
    size = 0
    async for doc in cursor:
        size += len(bson.encode(doc)) + mongo_apart.apart_bytes(doc)
        if size > max_bytes:
            await cursor.close()  # the server keeps an open cursor until it times out
            raise ReadTooLarge(max_bytes, len(docs) + 1)
        docs.append(doc)
    return docs
