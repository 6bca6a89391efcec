"""What a workflow's access check costs on the SQLite store, by the size of its definition.

Run: `python -m bench.access_check [--checks 2000]`. Every request about a run or a
workflow reads its workflow's owner and grants afresh (`Store.get_workflow_access`).
For definitions of 20 and 200 MCP steps, times that read through the real store, beside
the same answer taken from the stored definition with `json_extract` (the expression the
schema-7 migration fills the column with), as the store read it before: the baseline, on
the same file through the store's own kind of read connection (`SqliteReader`), without
the store's few lines around it. Prints the best of five batches, in µs per check.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from activities.store.access import WorkflowAccess
from activities.store.records import WorkflowRecord
from activities.store.sqlite import SqliteStore
from activities.store.sqlite_reader import SqliteReader
from activities.store.sqlite_schema import access_from_document
from bench import scenarios as sc
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.validation import normalise

SIZES = (20, 200)
FROM_DOCUMENT = f"SELECT {access_from_document('workflows')} FROM workflows WHERE id = ?"


async def _best(check: Callable[[], Awaitable[WorkflowAccess | None]], n: int) -> float:
    """Best µs per check over five batches of `n`."""
    batches = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(n):
            await check()
        batches.append((time.perf_counter() - started) / n * 1e6)
    return min(batches)


async def measure(checks: int) -> dict[int, tuple[int, float, float]]:
    """By steps: (the stored definition's bytes, µs from the column, µs from the document)."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="trellis-access-") as tmp:
        path = Path(tmp) / "trellis.db"
        store = SqliteStore(path)
        await store.connect()
        reader = SqliteReader(path)
        try:
            for steps in SIZES:
                name = f"w{steps}"
                given = WorkflowSpec.model_validate(
                    {"name": name, **sc.sequence(steps, sc.MCP_ECHO)}
                )
                spec = normalise(given, lambda: str(uuid.uuid4()))
                record = WorkflowRecord(**spec.model_dump(by_alias=False), id=name)
                await store.create_workflow(record)
                [(size,)] = await reader.execute_fetchall(
                    "SELECT length(doc) FROM workflows WHERE id = ?", (name,)
                )

                async def from_column(name: str = name) -> WorkflowAccess | None:
                    return await store.get_workflow_access(name)

                async def from_document(name: str = name) -> WorkflowAccess | None:
                    [(row,)] = await reader.execute_fetchall(FROM_DOCUMENT, (name,))
                    return WorkflowAccess.model_validate_json(row)

                assert await from_column() == await from_document()
                results[steps] = (
                    int(size),
                    await _best(from_column, checks),
                    await _best(from_document, checks),
                )
        finally:
            reader.close()
            await store.close()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=2000, help="per batch (five batches)")
    results = asyncio.run(measure(parser.parse_args(argv).checks))
    print(f"{'definition':<16} {'bytes':>8} {'column us':>10} {'document us':>12} {'ratio':>6}")
    for steps, (size, column, document) in results.items():
        ratio = column / document
        print(f"{steps:>4} MCP steps {size:>13,} {column:>10.1f} {document:>12.1f} {ratio:>5.2f}x")


if __name__ == "__main__":
    main()
