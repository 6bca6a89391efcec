"""How records map onto SQLite rows: the indexed columns plus the full document as JSON."""

from __future__ import annotations

import json
from typing import Any

from activities.store.documents import to_stored
from activities.store.records import (
    NodeRunRecord,
    RunRecord,
    WorkflowRecord,
    WorkflowVersionRecord,
)
from activities.store.search_text import search_fold

WORKFLOW_COLUMNS = "id, name, name_fold, description_fold, updated_at, doc"
RUN_COLUMNS = (
    "id, workflow_definition_id, status, parent_run_id, started_at, idempotency_key,"
    " schedule_id, rev, doc"
)
NODE_RUN_COLUMNS = "id, workflow_run_id, started_at, rev, doc"


def marks_for(columns: str) -> str:
    """`?, ?, …`, one for each of `columns` (a comma-separated list)."""
    return marks(len(columns.split(",")))


def marks(count: int) -> str:
    """`?, ?, …` for `count` parameters."""
    return ", ".join("?" for _ in range(count))


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def workflow_row(record: WorkflowRecord) -> tuple[Any, ...]:
    doc = to_stored(record)
    # Search compares folded text (search_text.py); the unique `name` stays as written.
    name_fold = search_fold(record.name)
    description_fold = search_fold(record.description or "")
    return record.id, record.name, name_fold, description_fold, doc["updated_at"], to_json(doc)


def version_row(record: WorkflowRecord) -> tuple[Any, ...]:
    """The row keeping `record.version` of a definition."""
    version = WorkflowVersionRecord(
        workflow_id=record.id,
        version=record.version,
        definition=record.spec(),
        created_at=record.updated_at,
        created_by=record.saved_by,
    )
    return record.id, record.version, to_json(to_stored(version))


def run_row(record: RunRecord) -> tuple[Any, ...]:
    doc = to_stored(record)
    return (
        record.id,
        record.workflow_definition_id,
        record.status,
        record.parent_run_id,
        doc["started_at"],
        record.idempotency_key,
        record.schedule_id,
        record.rev,
        to_json(doc),
    )


def node_run_row(record: NodeRunRecord) -> tuple[Any, ...]:
    doc = to_stored(record)
    return record.id, record.workflow_run_id, doc["started_at"], record.rev, to_json(doc)
