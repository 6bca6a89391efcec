"""Documents stored with NaN or Infinity, before those were refused, read again after the
migration that repairs them (SQLite's JSON functions refused them: the workflow's runs
answered 500)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from activities.store.sqlite_schema import SCHEMA_VERSION
from tests.support.platform import Platform

# The schema version at which the repair began (MIGRATIONS[5] takes 5 to 6).
BEFORE_REPAIR = 5


def _break(db_file: Path) -> None:
    """Write NaN and Infinity where a client's once landed, as Python's json wrote them."""
    with sqlite3.connect(db_file) as db:
        # Back to the schema of that time: the access kept beside a workflow came later.
        db.execute("DROP TRIGGER workflows_access_insert")
        db.execute("DROP TRIGGER workflows_access_update")
        db.execute("ALTER TABLE workflows DROP COLUMN access")
        for table in ("workflows", "workflow_versions", "runs", "node_runs", "events"):
            for rowid, doc in db.execute(f"SELECT rowid, doc FROM {table}").fetchall():
                broken = re.sub(r'"x":\s*1\.5', '"x": NaN', doc)
                broken = re.sub(r'"zoom":\s*2\.5', '"zoom": Infinity', broken)
                broken = re.sub(r'"v":\s*1\.25', '"v": -Infinity', broken)
                db.execute(f"UPDATE {table} SET doc = ? WHERE rowid = ?", (broken, rowid))
        db.execute(f"PRAGMA user_version = {BEFORE_REPAIR}")


async def test_a_workflow_and_its_runs_stored_with_nan_read_again_after_the_migration(
    platform: Platform, tmp_path: Path
) -> None:
    wf = await platform.create(
        {
            "canvas": {"viewport": {"x": 3, "y": 4, "zoom": 2.5}},
            "nodes": [
                {
                    "name": "A",
                    "nodeType": "step",
                    "executorKey": "builtin:echo",
                    "position": {"x": 1.5, "y": 2},
                    "config": {"got": "{{ input.v }}"},
                }
            ],
        }
    )
    run_id = await platform.trigger(wf, {"v": 1.25})
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    runs = f"/api/v1/workflows/{wf}/runs"

    _break(tmp_path / "trellis.db")
    assert (await platform.api.get(runs)).status_code == 500  # what such a data dir answered

    await platform.store.close()
    await platform.store.connect()  # migrates
    with sqlite3.connect(tmp_path / "trellis.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION

    listed = await platform.api.get(runs)
    assert listed.status_code == 200 and [r["id"] for r in listed.json()["runs"]] == [run_id]
    detail = await platform.api.get(f"{runs}/{run_id}")
    assert detail.status_code == 200, detail.text
    assert detail.json()["initialInput"] == {"v": None}
    snapshot = detail.json()["definitionSnapshot"]
    assert snapshot["nodes"][0]["position"] == {"x": 0, "y": 2}
    assert snapshot["canvas"]["viewport"] == {"x": 3, "y": 4, "zoom": 1}
    workflow = (await platform.api.get(f"/api/v1/workflows/{wf}")).json()
    assert workflow["nodes"][0]["position"] == {"x": 0, "y": 2}
    events = await platform.api.get(f"{runs}/{run_id}/events")  # a finished run's stream ends
    assert events.status_code == 200 and "event: run_completed" in events.text
    # The workflow runs again, its repaired definition snapshotted afresh.
    again = await platform.trigger(wf, {"v": 2})
    assert (await platform.wait(wf, again))["status"] == "completed"
