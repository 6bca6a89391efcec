"""Large fields of runs and node runs, kept apart from their documents on MongoDB.

A MongoDB document holds 16 MiB, but a run's input and output may each be close to that
(the API takes a 17 MiB body, a step's output may be 16 MiB), and so may a node run's. So
each of the fields in `FIELDS` whose JSON passes `APART_BYTES` is written as JSON text in
chunks to `field_chunks` under a fresh generation, first, and the document then keeps
`_apart.<field>` = {gen, count, bytes} in its place. A read puts each one back.

No transaction spans the chunks and the document, so the order of writes keeps a reader
whole: once a document write has landed, the chunks of the generations it replaced go (a
write that did not land takes its own). A read that then misses a generation's chunks
(replaced meanwhile) reads the document again. A writer cut off between its chunks and its
document leaves chunks nothing refers to; they go with their run (`delete_for_runs`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.database import AsyncDatabase

from activities.store.base import StoreError
from activities.store.mongo_payloads import CHUNK_BYTES
from activities.store.mongo_values import JSON_FIELD

Doc = dict[str, Any]
APART_FIELD = "_apart"
# A field's JSON above this is kept apart: a document then holds a few such at most.
APART_BYTES = 1024 * 1024
# The fields that may be large, by collection; the store never queries into them.
FIELDS: dict[str, tuple[str, ...]] = {
    "runs": ("initial_input", "final_output", "definition_snapshot"),
    "node_runs": ("input_snapshot", "output_snapshot"),
}
# Reads of one document whose chunks a newer write replaced meanwhile, before giving up.
READ_TRIES = 20

INDEXES: list[tuple[str, list[tuple[str, int]], dict[str, Any]]] = [
    ("field_chunks", [("gen", ASCENDING), ("index", ASCENDING)], {}),
    ("field_chunks", [("run_id", ASCENDING)], {}),
]


async def split(
    db: AsyncDatabase[Doc], collection: str, run_id: str, fields: Doc
) -> tuple[Doc, Doc]:
    """`fields` without the large ones, and those written apart (their refs by name)."""
    plain: Doc = {}
    refs: Doc = {}
    for name, value in fields.items():
        text = json.dumps(value) if name in FIELDS[collection] else ""
        if len(text) > APART_BYTES:
            refs[name] = await _write_chunks(db, run_id, text.encode())
        else:
            plain[name] = value
    return plain, refs


async def _write_chunks(db: AsyncDatabase[Doc], run_id: str, data: bytes) -> Doc:
    gen = uuid.uuid4().hex
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]
    for index, chunk in enumerate(chunks):
        await db.field_chunks.insert_one(
            {"_id": f"{gen}:{index}", "gen": gen, "run_id": run_id, "index": index, "data": chunk}
        )
    return {"gen": gen, "count": len(chunks), "bytes": len(data)}


def with_refs(doc: Doc, refs: Doc) -> Doc:
    """A document to insert or replace: `doc` with these fields apart."""
    return {**doc, APART_FIELD: refs} if refs else doc


def with_refs_set(update: Doc, collection: str, plain: Iterable[str], refs: Doc) -> Doc:
    """An update (`$set`/`$unset`) of `plain` fields, also setting these fields apart and
    dropping the refs of the large fields now set plainly."""
    to_set = dict(update.get("$set", {}))
    to_unset = dict(update.get("$unset", {}))
    for name in plain:
        if name in FIELDS[collection]:
            to_unset[f"{APART_FIELD}.{name}"] = ""
    for name, ref in refs.items():
        to_set[f"{APART_FIELD}.{name}"] = ref
        to_unset[name] = ""
        to_unset[f"{JSON_FIELD}.{name}"] = ""
    return {"$set": to_set, "$unset": to_unset}


def refs_of(doc: Doc | None) -> Doc:
    return dict((doc or {}).get(APART_FIELD) or {})


def apart_bytes(doc: Doc) -> int:
    """How much of the document is kept apart (its JSON text)."""
    return sum(int(ref.get("bytes", 0)) for ref in refs_of(doc).values())


async def drop(db: AsyncDatabase[Doc], refs: Iterable[Doc]) -> None:
    """The chunks of these generations (replaced, or of a write that did not land)."""
    gens = sorted({ref["gen"] for ref in refs})
    if gens:
        await db.field_chunks.delete_many({"gen": {"$in": gens}})


def replaced(before: Doc | None, written: Iterable[str]) -> list[Doc]:
    """The refs a write of the `written` fields replaced, over the document `before` it."""
    held = refs_of(before)
    return [held[name] for name in written if name in held]


async def resolve(
    db: AsyncDatabase[Doc], collection: str, doc: Doc, projection: Doc | None = None
) -> Doc | None:
    """`doc` with its fields apart put back; read again (with `projection`) while a newer
    write has replaced them; None if it is gone meanwhile."""
    for _ in range(READ_TRIES):
        refs = refs_of(doc)
        if not refs:
            doc.pop(APART_FIELD, None)
            return doc
        values = {name: await _read_chunks(db, ref) for name, ref in refs.items()}
        if all(value is not _MISSING for value in values.values()):
            return {**{k: v for k, v in doc.items() if k != APART_FIELD}, **values}
        again = await db[collection].find_one({"_id": doc["_id"]}, projection)
        if again is None:
            return None
        doc = again
    raise StoreError(f"{collection} {doc['_id']} kept changing while it was read")


async def resolve_all(
    db: AsyncDatabase[Doc], collection: str, docs: Sequence[Doc], projection: Doc | None = None
) -> list[Doc]:
    """`resolve` each; those gone meanwhile left out."""
    found = [await resolve(db, collection, doc, projection) for doc in docs]
    return [doc for doc in found if doc is not None]


_MISSING = object()


async def _read_chunks(db: AsyncDatabase[Doc], ref: Doc) -> Any:
    cursor = db.field_chunks.find({"gen": ref["gen"]}).sort("index", ASCENDING)
    chunks = await cursor.to_list()
    if len(chunks) != ref["count"]:
        return _MISSING
    return json.loads(b"".join(bytes(chunk["data"]) for chunk in chunks))


async def delete_for_runs(db: AsyncDatabase[Doc], run_ids: list[str]) -> None:
    """The chunks of these runs and their node runs (with any a cut-off write left)."""
    if run_ids:
        await db.field_chunks.delete_many({"run_id": {"$in": run_ids}})
