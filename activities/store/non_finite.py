"""Stored documents holding NaN or Infinity, made valid JSON again (a schema migration).

Before definitions and run input refused them (400), a client's NaN or Infinity was
stored as Python's json writes it: `NaN`, `Infinity`, which are not JSON. SQLite's JSON
functions refuse such a document, so every read or write of the workflow, or of a run
carrying its snapshot, failed (500). Each such number becomes what the API already showed
for it, `null`, except a canvas coordinate, which the definition model needs as a
number: its default (0, and 1 for a zoom).
"""

from __future__ import annotations

import json
import math
from typing import Any

import aiosqlite

# Every table that keeps a JSON document in `doc`.
DOCUMENT_TABLES = ("workflows", "workflow_versions", "runs", "node_runs", "events")
# Numbers the definition model requires, by the object they sit in: their defaults.
_CANVAS_DEFAULTS = {"position": {"x": 0, "y": 0}, "viewport": {"x": 0, "y": 0, "zoom": 1}}


def finite(value: Any, defaults: dict[str, Any] | None = None) -> Any:
    """`value` with every non-finite number replaced (see the module's docstring)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [finite(item) for item in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if defaults and key in defaults and isinstance(item, float) and not math.isfinite(item):
                out[key] = defaults[key]
            else:
                out[key] = finite(item, _CANVAS_DEFAULTS.get(key))
        return out
    return value


async def repair_non_finite_documents(db: aiosqlite.Connection) -> None:
    """Rewrite the documents SQLite cannot read as JSON, when Python's json can."""
    for table in DOCUMENT_TABLES:
        async with db.execute(f"SELECT rowid, doc FROM {table} WHERE NOT json_valid(doc)") as cur:
            broken = await cur.fetchall()
        for rowid, doc in broken:
            try:
                repaired = json.dumps(finite(json.loads(doc)), allow_nan=False)
            except ValueError:
                continue  # not a NaN case: left as it is, for someone to look at
            await db.execute(f"UPDATE {table} SET doc = ? WHERE rowid = ?", (repaired, rowid))
