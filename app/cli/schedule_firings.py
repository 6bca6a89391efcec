"""What a schedule's recent firing started, as `schedules show` says it: its run, a skip
(the skip log's reason), or a run not recorded (yet).

The API names a firing's run (`runId`) once the run is recorded; `null` says no more than
that none is: the firing was skipped (its workflow disabled), its run is not recorded yet
(it fired a moment ago) or was deleted by the run retention. The skip log tells the first
apart: a firing skipped logs its skip after it started and before the next firing did."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from app.cli.api_client import Answer
from app.cli.output import Session

# Skips read a page at a time, oldest first, and at most this many pages: a schedule that
# has skipped more than 10,000 times shows its latest unmatched as not recorded.
SKIPS_PAGE = 500
SKIP_PAGES = 20
NOT_RECORDED = "not recorded yet"


def recent_skips(session: Session, path: str, schedule: Answer) -> list[tuple[datetime, str]]:
    """The skips logged since the oldest recent firing without a run, oldest first; none
    read when every firing names its run."""
    unnamed = [_at(a["startedAt"]) for a in schedule.data["recentActions"] if not a.get("runId")]
    if not unnamed:
        return []
    since = min(unnamed)
    found: list[tuple[datetime, str]] = []
    after = None
    for _ in range(SKIP_PAGES):
        page = session.api.get(f"{path}/skips", afterId=after, limit=SKIPS_PAGE).data["skips"]
        found += [(_at(s["timestamp"]), str(s["reason"])) for s in page]
        if len(page) < SKIPS_PAGE:
            break
        after = page[-1]["id"]
    return [(at, reason) for at, reason in found if at >= since]


def firing_runs(actions: list[dict[str, Any]], skips: Sequence[tuple[datetime, str]]) -> list[str]:
    """Each firing's RUN cell: its run id, `none: skipped (REASON)` when a skip was logged
    between its start and the next firing's, else NOT_RECORDED."""
    starts = sorted(_at(a["startedAt"]) for a in actions)
    cells = []
    for action in actions:
        if action.get("runId"):
            cells.append(str(action["runId"]))
            continue
        start = _at(action["startedAt"])
        later = [s for s in starts if s > start]
        until = later[0] if later else None
        reasons = [why for at, why in skips if at >= start and (until is None or at < until)]
        cells.append(f"none: skipped ({reasons[0]})" if reasons else NOT_RECORDED)
    return cells


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
