"""Reads of a store grown large, as after months of use, against how they were read before.

Run: `python -m bench.large_store [--runs 40000] [--gates 2000] [--versions 1000]`.
Builds a SQLite store of `--runs` runs of a 14-step workflow (half of them one
workflow's, the rest spread over 20 others; 3 % failed, `--gates` waiting at a gate,
some paused, some never started), its rows written as the store writes them (`run_row`),
then times, best of five, in ms:

- a small workflow's runs in one status (the console's and the CLI's status filter: the
  count and the first page), and page 500 of the big workflow's runs, with this code's
  indexes and then with the ones before them (`id` not in them, no index of a workflow's
  runs by status), on the same file;
- the approvals inbox's read of the open gates (`list_gated_runs`, no snapshot parsed)
  against each gated run parsed whole and its approvers taken from its definition, as the
  inbox read them before;
- the reconciler's look for runs never started (`list_unstarted_runs`: `pending` only)
  against every unfinished run read and parsed, as it read them before;
- a workflow's list of `--versions` kept versions (`list_workflow_versions`, each summed
  up from its stored text) against each version parsed and validated whole, as the list
  read them before.

Each line prints its ratio to the baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from activities.store.documents import from_stored
from activities.store.records import (
    GatedRun,
    RunHeader,
    RunRecord,
    VersionSummary,
    WorkflowRecord,
    WorkflowVersionRecord,
)
from activities.store.sqlite import SqliteStore
from activities.store.sqlite_rows import RUN_COLUMNS, marks, marks_for, run_row, version_row
from activities.store.sqlite_schema import INDEXES
from temporal_workflows.definition import HumanReview, WorkflowNode, WorkflowSpec
from temporal_workflows.read_model import TERMINAL_RUN_STATUSES

# The indexes before this session's (schema version 1's, less `id`).
OLD_INDEXES = (
    "CREATE INDEX runs_workflow_started ON runs (workflow_definition_id, started_at)",
    "CREATE INDEX runs_status_started ON runs (status, started_at)",
    "CREATE INDEX runs_parent_started ON runs (parent_run_id, started_at)",
    "CREATE INDEX runs_started ON runs (started_at)",
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _spec() -> WorkflowSpec:
    review = HumanReview(requires_confirmation=True, approvers=["role:ops"])
    nodes = [
        WorkflowNode(
            id=f"s{i}",
            name=f"Step {i}",
            node_type="step",
            executor_key="tools/echo",
            config={"text": "Hello {{ input.name }}, welcome to the team " * 3},
            human_review=review if i == 7 else None,
        )
        for i in range(14)
    ]
    return WorkflowSpec(name="Onboarding", nodes=nodes)


def _runs(count: int, gates: int) -> list[RunRecord]:
    spec, rng = _spec(), random.Random(7)
    gate = [{"stepId": "s7", "kind": "confirmation", "createdAt": "2026-01-01T00:00:00Z"}]
    runs = []
    for i in range(count):
        status, pending = "completed", []
        if i < gates:
            status, pending = "awaiting_approval", gate
        elif rng.random() < 0.03:
            status = "failed"
        elif rng.random() < 0.005:
            status = rng.choice(["paused", "pending", "running"])
        workflow = "big" if i % 2 else f"wf-{rng.randrange(20)}"
        runs.append(
            RunRecord(
                id=f"run-{i:07d}", workflow_definition_id=workflow, workflow_version=1,
                status=status, started_at=T0 + timedelta(seconds=rng.randrange(15_552_000)),
                pending_requirements=pending, definition_snapshot=spec,
                final_output={"result": "welcome"} if status == "completed" else None,
            )
        )  # fmt: skip
    return runs


async def _best(read: Callable[[], Awaitable[Any]]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        await read()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def _use_old_indexes(path: Path) -> None:
    with sqlite3.connect(path) as db:
        for statement in INDEXES:
            db.execute("DROP INDEX " + statement.split(" IF NOT EXISTS ")[1].split()[0])
        for statement in OLD_INDEXES:
            db.execute(statement)


async def measure(runs: int, gates: int, versions: int = 1000) -> list[tuple[str, float, float]]:
    lines = []
    with tempfile.TemporaryDirectory(prefix="trellis-large-") as tmp:
        path = Path(tmp) / "trellis.db"
        store = SqliteStore(path)
        await store.connect()
        await store.close()
        rows = [run_row(r) for r in _runs(runs, gates)]
        with sqlite3.connect(path) as db:
            db.executemany(
                f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({marks_for(RUN_COLUMNS)})", rows
            )
            db.executemany(
                "INSERT INTO workflow_versions (workflow_id, version, doc) VALUES (?, ?, ?)",
                [version_row(_saved(n)) for n in range(1, versions + 1)],
            )
        store = SqliteStore(path)
        await store.connect()
        cutoff = T0 + timedelta(days=365)

        async def status_filter() -> Any:
            return await store.list_runs("wf-3", status="failed")

        async def deep_page() -> Any:
            return await store.list_runs("big", page=500)

        try:
            # Each read answers as its baseline does.
            gated = await store.list_gated_runs("awaiting_approval", 5000)
            assert gated == await _gated_whole(store)
            unstarted = [
                r.id for r in await _unfinished_whole(store, cutoff) if r.status == "pending"
            ]
            assert [r.id for r in await store.list_unstarted_runs(cutoff)] == unstarted
            new_filter, new_page = await _best(status_filter), await _best(deep_page)
            page_now = [r.id for r in (await deep_page())[0]]
            new_gates = await _best(lambda: store.list_gated_runs("awaiting_approval", 5000))
            old_gates = await _best(lambda: _gated_whole(store))
            new_unstarted = await _best(lambda: store.list_unstarted_runs(cutoff))
            old_unstarted = await _best(lambda: _unfinished_whole(store, cutoff))
            summaries = await store.list_workflow_versions("big")
            assert summaries == [VersionSummary.of(v) for v in await _versions_whole(store)]
            new_versions = await _best(lambda: store.list_workflow_versions("big"))
            old_versions = await _best(lambda: _versions_whole(store))
        finally:
            await store.close()
        # The store would put its indexes back when it connects: read with a raw connection.
        _use_old_indexes(path)
        reader = _OldReads(path)
        assert [r.id for r in await reader.deep_page()] == page_now
        old_filter, old_page = await _best(reader.status_filter), await _best(reader.deep_page)
        reader.close()
        lines += [
            ("a small workflow's failed runs (count, page 1)", new_filter, old_filter),
            ("page 500 of the big workflow's runs", new_page, old_page),
            (f"the inbox's open gates ({gates} gated runs)", new_gates, old_gates),
            ("the reconciler's never-started runs", new_unstarted, old_unstarted),
            (f"a workflow's versions ({versions} of 14 steps)", new_versions, old_versions),
        ]
    return lines


def _saved(version: int) -> WorkflowRecord:
    """Version `version` of the big workflow, as a save stores it."""
    spec = _spec().model_copy(update={"description": f"saved {version} times"})
    at = T0 + timedelta(minutes=version)
    return WorkflowRecord(**dict(spec), id="big", version=version, updated_at=at)


async def _versions_whole(store: SqliteStore) -> list[WorkflowVersionRecord]:
    """The versions list's read before: each version parsed and validated whole."""
    async with store._read() as db:
        rows = await db.execute_fetchall(
            "SELECT doc FROM workflow_versions WHERE workflow_id = ? ORDER BY version", ("big",)
        )
    return [from_stored(WorkflowVersionRecord, json.loads(r[0])) for r in rows]


async def _gated_whole(store: SqliteStore) -> list[GatedRun]:
    """The inbox's read before: every run in the status, parsed whole."""
    async with store._read() as db:
        rows = await db.execute_fetchall(
            "SELECT doc FROM runs WHERE status = ? ORDER BY started_at, id LIMIT ?",
            ("awaiting_approval", 5000),
        )
    return [GatedRun.of(RunRecord.model_validate_json(r[0])) for r in rows]


async def _unfinished_whole(store: SqliteStore, cutoff: datetime) -> list[RunRecord]:
    """The reconciler's read before: every unfinished run, parsed whole."""
    terminal = sorted(TERMINAL_RUN_STATUSES)
    async with store._read() as db:
        rows = await db.execute_fetchall(
            f"SELECT doc FROM runs WHERE status NOT IN ({marks(len(terminal))})"
            " AND started_at < ? ORDER BY started_at, id",
            (*terminal, cutoff.isoformat()),
        )
    return [RunRecord.model_validate_json(r[0]) for r in rows]


class _OldReads:
    """The list queries `SqliteStore.list_runs` makes, on a file with the old indexes."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path)

    async def status_filter(self) -> Any:
        return self._page("WHERE workflow_definition_id = ? AND status = ?", ("wf-3", "failed"), 0)

    async def deep_page(self) -> Any:
        return self._page("WHERE workflow_definition_id = ?", ("big",), 499 * 20)

    def _page(self, where: str, params: tuple[Any, ...], offset: int) -> Any:
        self._db.execute(f"SELECT COUNT(*) FROM runs {where}", params).fetchone()
        rows = self._db.execute(
            "SELECT json_remove(doc, '$.definition_snapshot') FROM runs "
            f"{where} ORDER BY started_at DESC, id DESC LIMIT 20 OFFSET ?",
            (*params, offset),
        ).fetchall()
        return [RunHeader.model_validate_json(r[0]) for r in rows]

    def close(self) -> None:
        self._db.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40_000)
    parser.add_argument("--gates", type=int, default=2_000)
    parser.add_argument("--versions", type=int, default=1_000)
    args = parser.parse_args(argv)
    lines = asyncio.run(measure(args.runs, args.gates, args.versions))
    print(f"store of {args.runs:,} runs; best of five, ms")
    print(f"{'read':<52} {'now':>8} {'before':>8} {'ratio':>7}")
    for label, now, before in lines:
        print(f"{label:<52} {now:>8.1f} {before:>8.1f} {now / before:>6.2f}x")


if __name__ == "__main__":
    main()
