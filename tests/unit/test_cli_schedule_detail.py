"""`trellis schedules show` as a table: the firings that started nothing, each firing's
run, and where its runs are."""

from __future__ import annotations

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


def test_schedules_show_names_each_firings_run() -> None:
    fired = {"scheduledAt": "2026-11-29T09:00:00Z", "startedAt": "2026-11-29T09:00:01Z"}
    shown = {
        "id": "sched-w-1", "workflowId": "w", "cron": None, "intervalSeconds": 60,
        "timeZone": "UTC", "initialInput": {}, "overlapPolicy": "skip", "paused": False,
        "note": None, "numActions": 2, "nextActionTimes": [],
        "recentActions": [
            {**fired, "triggerWorkflowId": "sched-w-1-run-a", "runId": "run-started"},
            {**fired, "triggerWorkflowId": "sched-w-1-run-b", "runId": None},
        ],
        "createdAt": "2026-11-29T00:00:00Z", "updatedAt": None,
    }  # fmt: skip
    console = Console(record=True, width=200)
    console.print(_schedule_detail(shown))
    rows = [line for line in console.export_text().splitlines() if "sched-w-1-run-" in line]
    assert "run-started" in rows[0] and "sched-w-1-run-a" in rows[0]
    assert " - " in rows[1] and "run-started" not in rows[1]
