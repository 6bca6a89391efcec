"""The CLI's times: UTC, and saying so."""

from __future__ import annotations

from app.cli.output import when


def test_a_time_is_shown_in_utc_with_its_zone_named() -> None:
    # A bare `2026-11-29 13:44:00` beside a schedule's "(Asia/Kolkata)" read as local time.
    assert when("2026-11-29T19:14:00.123456+05:30") == "2026-11-29 13:44:00Z"
    assert when("2026-11-29T13:44:00Z") == "2026-11-29 13:44:00Z"
    assert when(None) == "-" and when("not a time") == "not a time"
