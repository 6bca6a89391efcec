"""A run update's changes: validated field by field and turned into their stored values,
exactly what validating and storing the whole changed record would write."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from activities.store.documents import stored_run_changes, to_stored
from activities.store.records import RunRecord
from temporal_workflows.definition import WorkflowSpec


def _run() -> RunRecord:
    nodes = [{"id": f"s{i}", "name": f"s{i}", "nodeType": "step"} for i in range(3)]
    spec = WorkflowSpec.model_validate({"id": "w", "name": "w", "nodes": nodes})
    return RunRecord(
        id="r", workflow_definition_id="w", workflow_version=1, definition_snapshot=spec
    )


def test_stored_changes_are_what_storing_the_changed_record_would_write() -> None:
    run = _run()
    changes = {
        "status": "completed",
        "finished_at": "2026-11-26T09:00:00.5+02:00",
        "final_output": {"result": [1, "two", None]},
        "pending_requirements": [],
        "triggered_by": {"userId": "alice", "scopes": ["runs:read"]},
        "error_summary": None,
    }
    stored = stored_run_changes(changes)
    whole = to_stored(RunRecord.model_validate({**run.model_dump(by_alias=False), **changes}))
    assert {k: stored[k] for k in changes} == {k: whole[k] for k in changes}
    assert stored["finished_at"] == "2026-11-26T07:00:00.500000Z"  # fixed-width UTC text
    assert set(stored) == {*changes, "updated_at"}  # updated_at follows every write


def test_a_writer_may_state_updated_at() -> None:
    stored = stored_run_changes({"updated_at": "2026-11-26T09:00:00Z"})
    assert stored == {"updated_at": "2026-11-26T09:00:00.000000Z"}


def test_a_change_of_the_wrong_type_or_an_unknown_field_is_refused() -> None:
    for wrong in ({"status": "finished-ish"}, {"status": 5}, {"finished_at": "soon"}):
        with pytest.raises(ValidationError):
            stored_run_changes(wrong)
    for field in ("id", "rev", "no_such_field"):
        with pytest.raises(ValueError, match="unknown or immutable"):
            stored_run_changes({field: "x"})
