"""How records become stored documents and back, shared by the SQLite and MongoDB stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic_core import to_jsonable_python

from activities.store.records import RunRecord, StoredModel

M = TypeVar("M", bound=StoredModel)


def iso_utc(value: datetime) -> str:
    """Fixed-width ISO 8601 UTC text, so string order is time order (naive means UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def to_stored(record: StoredModel) -> dict[str, Any]:
    """The snake_case document of a record, its top-level datetimes as fixed-width UTC text."""
    doc = record.to_document()
    for name in type(record).model_fields:
        value = getattr(record, name)
        if isinstance(value, datetime):
            doc[name] = iso_utc(value)
    return doc


def from_stored(model: type[M], doc: dict[str, Any]) -> M:
    """Load a stored document back into its record (drops MongoDB's `_id`)."""
    return model.model_validate({k: v for k, v in doc.items() if k != "_id"})


def apply_run_changes(current: RunRecord, rev: int, changes: dict[str, Any]) -> RunRecord:
    """The run with snake_case `changes` applied and `rev` stored; unknown fields are a bug."""
    unknown = set(changes) - (set(RunRecord.model_fields) - {"id"})
    if unknown:
        raise ValueError(f"unknown or immutable run fields: {sorted(unknown)}")
    # The current fields as they are: nested models (the definition snapshot, the largest
    # part of a run) pass validation as instances instead of being dumped and re-parsed.
    merged = {name: getattr(current, name) for name in RunRecord.model_fields}
    merged.update(changes)
    merged["rev"] = rev
    # updated_at follows every applied write unless the writer states it.
    if "updated_at" not in changes:
        merged["updated_at"] = datetime.now(UTC)
    return RunRecord.model_validate(merged)


def event_document(event: dict[str, Any]) -> dict[str, Any]:
    """A JSON-safe copy of an event (datetimes and models become JSON values)."""
    doc = to_jsonable_python(event)
    if not isinstance(doc, dict):
        raise ValueError("an event must be a JSON object")
    return doc
