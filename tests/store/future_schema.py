"""A store file as a release after this one would leave it: this code's migrations, then
one more, through the same `migrate` (so it records what that release would)."""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from activities.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, Migration, migrate

FUTURE_VERSION = SCHEMA_VERSION + 1


def future_migration(*, additive: bool) -> Migration:
    """A table this code does not know, with a row in it."""
    return Migration(
        additive=additive,
        steps=[
            "CREATE TABLE future_notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL)",
            "INSERT INTO future_notes (note) VALUES ('kept')",
        ],
    )


async def migrate_to_future(path: Path, *, additive: bool) -> None:
    """Take the closed file at `path` (made if missing) to FUTURE_VERSION."""
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("BEGIN IMMEDIATE")
        await migrate(db, [*MIGRATIONS, future_migration(additive=additive)])
        await db.execute("COMMIT")
