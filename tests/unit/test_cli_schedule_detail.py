"""`trellis schedules show` as a table: the firings that started nothing, each firing's
run, and where its runs are."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from app.cli.schedule_commands import _schedule_detail


def test_schedules_show_says_how_many_firings_started_nothing() -> None:
    shown = {
        "id": "sched-w-1", "workflowId": "w", "cron": "0 9 * * *", "intervalSeconds": None,
        "timeZone": "UTC", "initialInput": {}, "overlapPolicy": "skip", "paused": False,
        "note": None, "numActions": 3, "numActionsSkippedOverlap": 2,
        "numActionsMissedCatchupWindow": 0, "nextActionTimes": [], "recentActions": [],
        "createdAt": "2026-11-29T00:00:00Z", "updatedAt": None,
    }  # fmt: skip
    console = Console(record=True, width=200)
    console.print(_schedule_detail(shown))
    text = console.export_text()
    assert "fired 3 times (2 skipped by its overlap policy)," in text
    assert "its runs: trellis runs list w --schedule sched-w-1" in text


def test_schedules_show_names_who_created_it() -> None:
    base = {
        "id": "sched-w-1", "workflowId": "w", "cron": None, "intervalSeconds": 60,
        "timeZone": "UTC", "initialInput": {}, "overlapPolicy": "skip", "paused": False,
        "note": None, "numActions": 0, "nextActionTimes": [], "recentActions": [],
        "createdAt": "2026-11-29T00:00:00Z", "updatedAt": None,
    }  # fmt: skip
    for schedule, said in (({**base, "createdBy": "alice"}, True), (base, False)):
        console = Console(record=True, width=200)
        console.print(_schedule_detail(schedule))
        assert (" by alice, updated" in console.export_text()) is said


def test_schedules_show_names_each_firings_run_or_its_skip_or_none_recorded_yet() -> None:
    # A firing without a run showed `-`, which README said is a skip: a firing whose run is
    # not recorded yet (the API's `runId: null` too) read as skipped.
    def fired(minute: int, run_id: str | None) -> dict[str, Any]:
        return {"scheduledAt": f"2026-11-29T09:0{minute}:00Z", "runId": run_id,
                "startedAt": f"2026-11-29T09:0{minute}:01Z",
                "triggerWorkflowId": f"sched-w-1-run-{minute}"}  # fmt: skip

    shown = {
        "id": "sched-w-1", "workflowId": "w", "cron": None, "intervalSeconds": 60,
        "timeZone": "UTC", "initialInput": {}, "overlapPolicy": "skip", "paused": False,
        "note": None, "numActions": 4, "nextActionTimes": [],
        "recentActions": [fired(1, "run-started"), fired(2, None), fired(3, None), fired(4, None)],
        "createdAt": "2026-11-29T00:00:00Z", "updatedAt": None,
    }  # fmt: skip
    # Logged after the firing of 09:02 started and before the next one did.
    skips = [(datetime(2026, 11, 29, 9, 2, 3, tzinfo=UTC), "workflow disabled")]
    console = Console(record=True, width=200)
    console.print(_schedule_detail(shown, skips))
    rows = [line for line in console.export_text().splitlines() if "sched-w-1-run-" in line]
    assert "run-started" in rows[0] and "sched-w-1-run-1" in rows[0]
    assert "none: skipped (workflow disabled)" in rows[1] and "sched-w-1-run-2" in rows[1]
    for row in rows[2:]:
        assert "not recorded yet" in row and "skipped" not in row, row
