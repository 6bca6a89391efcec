"""The workflow's record timestamps: the store's fixed-width UTC text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
