"""A run's latest node runs, read from the last pages of `GET …/nodes` (a run of thousands
is never read whole for a table: `runs show`, the live view of `runs watch`)."""

from __future__ import annotations

from typing import Any

from app.cli.output import Session


def latest_node_runs(
    session: Session, run_path: str, count: int, total: int
) -> tuple[list[dict[str, Any]], int]:
    """The run's latest `count` node runs (in the API's order: by start, unstarted last)
    and how many it has, read from the last pages of `/nodes` for `total`, its count when
    last read. A run that grew since is read again from its new last page (once)."""
    tail: list[dict[str, Any]] = []
    for _ in range(2):
        last = max(1, -(-total // count))
        tail, seen = [], total
        for page in (last - 1, last) if last > 1 else (1,):
            answer = session.api.get(f"{run_path}/nodes", page=page, perPage=count).data
            tail += answer["nodeRuns"]
            seen = answer["pagination"]["total"]
        if seen == total:
            break
        total = seen
    return tail[-count:], total
