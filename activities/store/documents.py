"""How records become stored documents and back, shared by the SQLite and MongoDB stores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from activities.store.records import RunRecord, StoredModel
from temporal_workflows.clock import fixed_width
from temporal_workflows.retry import PAUSED_ERROR, RESET_ERROR, WORKER_SHUTDOWN_ERROR

M = TypeVar("M", bound=StoredModel)
# What a run update may change: not its id, and its rev only as the update's own.
_CHANGEABLE_RUN_FIELDS = frozenset(RunRecord.model_fields) - {"id", "rev"}
# Errors of attempts that did not fail: a deploy's or an operator's (in Temporal) cut-off.
_NO_FAILURE = frozenset({WORKER_SHUTDOWN_ERROR, PAUSED_ERROR, RESET_ERROR})


def iso_utc(value: datetime) -> str:
    """Fixed-width ISO 8601 UTC text, so string order is time order (naive means UTC)."""
    return fixed_width(value if value.tzinfo is None else value.astimezone(UTC))


def to_stored(record: StoredModel) -> dict[str, Any]:
    """The snake_case document of a record, its top-level datetimes as fixed-width UTC text."""
    doc = record.to_document()
    for name in type(record).model_fields:
        value = getattr(record, name)
        if isinstance(value, datetime):
            doc[name] = iso_utc(value)
    return doc


def from_stored(model: type[M], doc: dict[str, Any]) -> M:
    """Load a stored document back into its record (drops MongoDB's `_id`).

    The document is JSON (`to_stored`: datetimes as text), so it is validated as pydantic
    validates JSON, not strictly: a strict model (a definition, `WorkflowRecord`) would
    refuse text for a datetime. What was stored was validated when it was written.
    """
    return model.model_validate({k: v for k, v in doc.items() if k != "_id"}, strict=False)


def stored_run_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` to a run as their stored values, each validated as that field of a run
    record (a store can then write them into the stored document without reading it).

    Unknown or immutable fields are a bug, a value of the wrong type is refused (as
    validating the whole record would); top-level datetimes become fixed-width UTC text,
    as `to_stored` writes them, and `updated_at` is now unless the writer states it.
    """
    unknown = set(changes) - _CHANGEABLE_RUN_FIELDS
    if unknown:
        raise ValueError(f"unknown or immutable run fields: {sorted(unknown)}")
    stored: dict[str, Any] = {}
    for name, value in {"updated_at": datetime.now(UTC), **changes}.items():
        adapter = _run_field(name)
        valid = adapter.validate_python(value)
        if isinstance(valid, datetime):
            stored[name] = iso_utc(valid)
        else:
            stored[name] = adapter.dump_python(valid, mode="json", by_alias=False)
    return stored


@cache
def _run_field(name: str) -> TypeAdapter[Any]:
    """A validator and serializer of one run field, with its constraints."""
    info = RunRecord.model_fields[name]
    annotation: Any = info.annotation
    if info.metadata:  # Annotated needs at least one
        annotation = Annotated[annotation, *info.metadata]
    return TypeAdapter(annotation)


def event_document(event: dict[str, Any]) -> dict[str, Any]:
    """A JSON-safe copy of an event (datetimes and models become JSON values)."""
    doc = to_jsonable_python(event)
    if not isinstance(doc, dict):
        raise ValueError("an event must be a JSON object")
    return doc


def merged_node_run(stored: dict[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` written over a stored node run. Its `started_at` stays the first one set:
    a node run starts once, though each attempt of a retried step writes its own start,
    and so does a step gated before it runs once the gate is decided. A cancel over a
    failed attempt keeps that attempt's error (`cancelled_after_failure`)."""
    if not stored:
        return fields
    merged = {**stored, **fields}
    if stored.get("started_at"):
        merged["started_at"] = stored["started_at"]
    if (error := cancelled_after_failure(stored, fields)) is not None:
        merged["error"] = error
    return merged


def cancelled_after_failure(stored: dict[str, Any], fields: dict[str, Any]) -> str | None:
    """The error of a cancel written over a step waiting to retry: `<the cancel's error>
    (its last attempt failed: <that attempt's error>)`; None for any other write.

    Between attempts the node run is `running` with the failed attempt's error (the step
    activity's write); the workflow does not see Temporal's retries, so its cancel wrote
    only `cancelled` over it, and a run cancelled because it was stuck retrying no longer
    said why. A write naming another attempt (one cancelled before its start landed) is
    that attempt's own end, not the failed one's. The same cancel written again (its
    workflow task repeated) keeps what the first one said.
    """
    if fields.get("status") != "cancelled":
        return None
    said = f"{fields.get('error') or 'cancelled'} (its last attempt failed: "
    kept = stored.get("error")
    if stored.get("status") == "cancelled" and kept and kept.startswith(said):
        return str(kept)
    if stored.get("status") != "running" or not kept or kept in _NO_FAILURE:
        return None  # an attempt a deploy or an operator cut off is no failure to keep
    if fields.get("attempt") not in (None, stored.get("attempt")):
        return None
    return f"{said}{kept})"


def start_missed(stored: dict[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    """What a node-run write refused over `stored` (a newer rev) still tells: the start of
    the attempt it carries (`attempt`, and `started_at` and `input_snapshot` where `stored`
    has none), when `stored` shows no attempt. Empty otherwise.

    A step's attempt writes its start only after 0.2 s; a cancel in that time has the
    workflow end its node run first, at a higher rev, so the attempt's writes are refused,
    and the node run said the step never started though it was called. The stored status,
    error, times and rev stay; the refused write's events are not logged (the log only
    appends, and its end is already there: docs/lineage-events-schedules.md).
    """
    if not stored or stored.get("attempt") or not carries_start(fields):
        return {}
    missed: dict[str, Any] = {"attempt": fields["attempt"]}
    if not stored.get("started_at"):
        missed["started_at"] = fields["started_at"]
    if stored.get("input_snapshot") is None and fields.get("input_snapshot") is not None:
        missed["input_snapshot"] = fields["input_snapshot"]
    return missed


def carries_start(fields: dict[str, Any]) -> bool:
    """Whether a node-run write says an attempt started (its number and start)."""
    return bool(fields.get("attempt")) and bool(fields.get("started_at"))


def event_keys_for(
    events: Sequence[dict[str, Any]], keys: Sequence[str | None]
) -> list[str | None]:
    """One key per event (None: unkeyed); `keys` left empty keys none of them."""
    if keys and len(keys) != len(events):
        raise ValueError(f"{len(keys)} event keys for {len(events)} events")
    return list(keys) if keys else [None] * len(events)
