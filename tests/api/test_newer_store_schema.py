"""A rollback across a release whose migration only added: this code serves the newer
file as it is, reads what the newer release wrote and writes its own runs into it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from activities.store.sqlite import SqliteStore
from tests.store.future_schema import FUTURE_VERSION, migrate_to_future
from tests.support.platform import Platform

ECHO = {"nodes": [{"name": "A", "nodeType": "step", "executorKey": "builtin:echo"}]}


async def test_a_newer_file_an_additive_migration_made_serves_reads_and_runs(
    platform: Platform, tmp_path: Path
) -> None:
    if not isinstance(platform.store, SqliteStore):
        pytest.skip("SQLite's schema version (MongoDB keeps none)")
    wf = await platform.create(ECHO)
    before = await platform.trigger(wf, {"v": 1})
    assert (await platform.wait(wf, before))["status"] == "completed"

    await platform.store.close()
    await migrate_to_future(tmp_path / "trellis.db", additive=True)  # the newer release
    await platform.store.connect()  # this code again: a rollback

    runs = f"/api/v1/workflows/{wf}/runs"
    listed = await platform.api.get(runs)
    assert listed.status_code == 200 and [r["id"] for r in listed.json()["runs"]] == [before]
    detail = await platform.api.get(f"{runs}/{before}")
    assert detail.status_code == 200 and detail.json()["initialInput"] == {"v": 1}
    assert [n["status"] for n in detail.json()["nodeRuns"]] == ["completed"]
    after = await platform.trigger(wf, {"v": 2})
    assert (await platform.wait(wf, after))["status"] == "completed"
    other = await platform.create(ECHO)
    assert (await platform.api.get(f"/api/v1/workflows/{other}")).status_code == 200
    events = await platform.api.get(f"{runs}/{after}/events")
    assert events.status_code == 200 and "event: run_completed" in events.text

    with sqlite3.connect(tmp_path / "trellis.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == FUTURE_VERSION
        assert db.execute("SELECT note FROM future_notes").fetchall() == [("kept",)]
