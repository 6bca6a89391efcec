"""A run record's update: the changes validated and applied, the rest carried as it is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from activities.store.documents import apply_run_changes, stored_run_changes, to_stored
from activities.store.records import RunRecord
from temporal_workflows.definition import WorkflowSpec


def _run() -> RunRecord:
    nodes = [{"id": f"s{i}", "name": f"s{i}", "nodeType": "step"} for i in range(3)]
    spec = WorkflowSpec.model_validate({"id": "w", "name": "w", "nodes": nodes})
    return RunRecord(
        id="r", workflow_definition_id="w", workflow_version=1, definition_snapshot=spec
    )


def test_changes_are_validated_and_the_rest_is_kept() -> None:
    run = _run()
    finished = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    updated = apply_run_changes(
        run, 7, {"status": "completed", "finished_at": finished.isoformat()}
    )
    assert (updated.status, updated.finished_at, updated.rev) == ("completed", finished, 7)
    assert updated.model_dump(exclude={"status", "finished_at", "rev", "updated_at"}) == (
        run.model_dump(exclude={"status", "finished_at", "rev", "updated_at"})
    )
    # The definition snapshot is carried, not dumped and parsed again (the costly part).
    assert updated.definition_snapshot is run.definition_snapshot


def test_a_change_of_the_wrong_type_or_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError):
        apply_run_changes(_run(), 2, {"status": 5})
    with pytest.raises(ValueError, match="unknown or immutable"):
        apply_run_changes(_run(), 2, {"id": "other"})
    with pytest.raises(ValueError, match="unknown or immutable"):
        apply_run_changes(_run(), 2, {"rev": 9})


def test_stored_changes_are_what_applying_them_would_store() -> None:
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
    applied = to_stored(apply_run_changes(run, 2, changes))
    assert {k: stored[k] for k in changes} == {k: applied[k] for k in changes}
    assert stored["finished_at"] == "2026-11-26T07:00:00.500000Z"  # fixed-width UTC text
    assert set(stored) == {*changes, "updated_at"}


def test_stored_changes_refuse_what_applying_them_refuses() -> None:
    with pytest.raises(ValidationError):
        stored_run_changes({"status": "finished-ish"})
    for field in ("id", "rev", "no_such_field"):
        with pytest.raises(ValueError, match="unknown or immutable"):
            stored_run_changes({field: "x"})
