"""The workflow's record timestamps: the store's fixed-width UTC text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from activities.store.documents import iso_utc
from temporal_workflows.clock import fixed_width


def test_stamps_are_fixed_width_utc_text_in_time_order() -> None:
    start = datetime(2026, 11, 26, 22, 45, 30, tzinfo=UTC)
    moments = [start + timedelta(microseconds=n) for n in (0, 1, 999_999, 1_000_000)]
    stamps = [fixed_width(m) for m in moments]
    assert stamps[:2] == ["2026-11-26T22:45:30.000000Z", "2026-11-26T22:45:30.000001Z"]
    assert {len(s) for s in stamps} == {27}
    assert sorted(stamps) == stamps
    # The same text the store writes for the same moment.
    assert stamps == [iso_utc(m) for m in moments]


def test_stored_times_are_fixed_width_in_any_year_and_zone() -> None:
    # strftime's %Y does not pad years before 1000 (glibc): "5-01-01…" sorted after "2026-…".
    assert iso_utc(datetime(5, 1, 1)) == "0005-01-01T00:00:00.000000Z"
    east = timezone(timedelta(hours=2))
    assert iso_utc(datetime(2026, 1, 1, 1, 30, tzinfo=east)) == "2025-12-31T23:30:00.000000Z"
