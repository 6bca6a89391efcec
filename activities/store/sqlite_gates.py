"""Runs' open gates read in SQL, without parsing their definition snapshots.

The approvals inbox and the gates gauge read every run waiting at a gate. Parsed whole
(pydantic), 3,500 such runs cost the API's loop ~240 ms per read; their snapshots are
most of their size. Here SQLite takes out, in one parse per run, what the inbox shows:
the run's open gates, its definition's version and its workflow's name. Who may decide
each gate (the `approvers` of the snapshot's steps) belongs to the definition, so it is
read once per workflow version, from one of its runs, and kept: a version's definition
never changes once saved (any change to it is a new version).
"""

from __future__ import annotations

import json
import re
from typing import Any

from activities.store.records import GatedRun
from activities.store.sqlite_reader import SqliteReader
from activities.store.sqlite_rows import marks


def gated_runs_query(visible: str) -> str:
    """Runs in one status (`?`) with open gates, oldest first, at most `?`; `visible`: an
    extra clause on the runs. A run's document is parsed once, for
    [workflow_version, pending_requirements, the snapshot's name]; the test for open
    gates reads that short text. (The subquery's `LIMIT -1` keeps SQLite from merging it
    into the outer query, which would parse the document again for the test; SQLite
    before 3.35 has no `MATERIALIZED` to say so.)"""
    return (
        "SELECT id, workflow_definition_id, status, parts FROM (SELECT id,"
        " workflow_definition_id, status, started_at, json_extract(doc, '$.workflow_version',"
        " '$.pending_requirements', '$.definition_snapshot.name') AS parts FROM runs"
        f" WHERE status = ?{visible} LIMIT -1)"
        " WHERE json_array_length(parts, '$[1]') > 0 ORDER BY started_at, id LIMIT ?"
    )


# SQLite writes a path's label in quotes when it holds more than letters and digits
# (`$."definition_snapshot".nodes[0]."human_review"`); both spellings are taken.
_IN_REVIEW = (
    "(t.path LIKE '%.\"human\\_review\"' ESCAPE '\\' OR t.path LIKE '%.human\\_review' ESCAPE '\\')"
)
_NODE_OF_REVIEW = (
    "CASE WHEN t.path LIKE '%\"' THEN substr(t.path, 1, length(t.path) - 15)"
    " ELSE substr(t.path, 1, length(t.path) - 13) END"
)
# Each `approvers` list under a `human_review`, as [path of its node, node id, approvers].
_REVIEWS = (
    "(SELECT json_group_array(json_array(node, json_extract(runs.doc, node || '.id'),"
    " json(approvers))) FROM ("
    f"SELECT {_NODE_OF_REVIEW} AS node, t.value AS approvers"
    " FROM json_tree(runs.doc, '$.definition_snapshot.nodes') AS t"
    f" WHERE t.key = 'approvers' AND t.type = 'array' AND {_IN_REVIEW}))"
)
# Where the snapshot's nodes are: its top-level list and the sequences nested in nodes
# (temporal_workflows/definition.py, `child_sequences`). A `human_review` elsewhere (in a
# step's free-form `config`) is no gate's.
_NODE_PATH = re.compile(
    r'\$\."?definition_snapshot"?\.nodes\[\d+\]'
    r'(?:\.(?:"?(?:children|true_steps|false_steps)"?\[\d+\]|choices\[\d+\]\.steps\[\d+\]))*'
)
# Workflow versions whose approvers are kept; past this many the cache starts again.
VERSIONS_KEPT = 4096

Version = tuple[str, int]


class GateReader:
    """Reads runs with open gates; keeps each workflow version's approvers by step id."""

    def __init__(self) -> None:
        self._approvers: dict[Version, dict[str, list[str]]] = {}

    async def gated_runs(self, db: SqliteReader, rows: Any) -> list[GatedRun]:
        """GatedRuns from rows of `gated_runs_query`, reading the approvers of versions
        not seen before from `db`."""
        runs = []
        for run_id, workflow_id, status, parts in rows:
            version, pending, name = json.loads(parts)
            runs.append((run_id, (workflow_id, version), status, pending, name))
        needed: dict[Version, str] = {}
        for run_id, version, *_ in runs:
            needed.setdefault(version, run_id)
        if len(self._approvers) + len(needed) > VERSIONS_KEPT:
            self._approvers.clear()  # before looking: every version this read needs is read
        unseen = {v: run_id for v, run_id in needed.items() if v not in self._approvers}
        if unseen:
            await self._read_approvers(db, unseen)
        return [
            GatedRun(
                id=run_id,
                workflow_definition_id=version[0],
                workflow_name=name,
                status=status,
                pending_requirements=pending,
                approvers=self._approvers.get(version, {}),
            )
            for run_id, version, status, pending, name in runs
        ]

    async def _read_approvers(self, db: SqliteReader, unseen: dict[Version, str]) -> None:
        by_run = {run_id: version for version, run_id in unseen.items()}
        ids = list(by_run)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            read = await db.execute_fetchall(
                f"SELECT id, {_REVIEWS} FROM runs WHERE id IN ({marks(len(chunk))})", chunk
            )
            for run_id, reviews in read:
                self._approvers[by_run[run_id]] = approvers_of(reviews)


def approvers_of(reviews: str | None) -> dict[str, list[str]]:
    """Step id -> approvers, from a run's `_REVIEWS` (steps naming none left out)."""
    approvers: dict[str, list[str]] = {}
    for path, node_id, names in json.loads(reviews or "[]"):
        if isinstance(node_id, str) and names and _NODE_PATH.fullmatch(path):
            approvers.setdefault(node_id, names)
    return approvers
