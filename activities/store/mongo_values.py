"""JSON values BSON cannot hold, kept by the MongoDB store as JSON text beside the document.

A run's input, a step's output or a definition's config is any JSON, and JSON has integers
of any size and keys holding any character (SQLite keeps them as written). BSON's integers
stop at 64 bits, and its key names end at a NUL: the driver refuses a document holding a
larger integer or a key with a NUL. So a top-level field whose value holds one is stored
under `_json` as JSON text instead, and read back from there. The store never queries into
such fields (inputs, outputs, snapshots, event bodies), only into ids, names, statuses and
times, which are never such values; a gated run's open gates are found in either form.

A write is first sent as it is: the driver encodes it before sending anything and refuses
such an integer with OverflowError, such a key with InvalidDocument, and only then is the
document searched for them. So the common write pays nothing for this.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bson.errors import InvalidDocument

# Where a document keeps the fields BSON cannot hold, as JSON text by field name.
JSON_FIELD = "_json"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

Doc = dict[str, Any]
T = TypeVar("T")
# What the driver raises, before sending anything, for a value BSON cannot hold.
_REFUSED = (OverflowError, InvalidDocument)


async def write_bson_safe(write: Callable[[Doc], Awaitable[T]], doc: Doc) -> T:
    """Insert or replace with `doc`; if BSON cannot hold it, with `to_bson_safe(doc)`."""
    try:
        return await write(doc)
    except _REFUSED:
        return await write(to_bson_safe(doc))


async def update_bson_safe(update: Callable[[Doc], Awaitable[T]], fields: Doc) -> T:
    """Update with `fields` set; if BSON cannot hold them, with the large ones as text."""
    try:
        return await update(set_bson_safe(fields, as_text=False))
    except _REFUSED:
        return await update(set_bson_safe(fields, as_text=True))


def bson_cannot_hold(value: Any) -> bool:
    """Whether `value` holds, anywhere inside it, an integer outside BSON's 64 bits or a
    key with a NUL."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not INT64_MIN <= value <= INT64_MAX
    if isinstance(value, dict):
        return any(
            (isinstance(k, str) and "\x00" in k) or bson_cannot_hold(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(bson_cannot_hold(v) for v in value)
    return False


def to_bson_safe(doc: Doc) -> Doc:
    """`doc` to insert or replace: fields BSON cannot hold moved under `_json` as text."""
    safe: Doc = {}
    texts: dict[str, str] = {}
    for name, value in doc.items():
        if bson_cannot_hold(value):
            texts[name] = json.dumps(value)
        else:
            safe[name] = value
    if texts:
        safe[JSON_FIELD] = texts
    return safe


def set_bson_safe(fields: Doc, as_text: bool) -> Doc:
    """An update setting `fields`: with `as_text`, each one BSON cannot hold is set as text
    under `_json` (its plain field removed); every other one is set plainly (its text, if
    any, removed)."""
    to_set: Doc = {}
    to_unset: Doc = {}
    for name, value in fields.items():
        if as_text and bson_cannot_hold(value):
            to_set[f"{JSON_FIELD}.{name}"] = json.dumps(value)
            to_unset[name] = ""
        else:
            to_set[name] = value
            to_unset[f"{JSON_FIELD}.{name}"] = ""
    return {"$set": to_set, "$unset": to_unset}


def from_bson_safe(doc: Doc) -> Doc:
    """A stored document with its `_json` fields read back in place."""
    texts = doc.get(JSON_FIELD)
    if not texts:
        doc.pop(JSON_FIELD, None)
        return doc
    restored = {name: value for name, value in doc.items() if name != JSON_FIELD}
    for name, text in texts.items():
        restored[name] = json.loads(text)
    return restored
