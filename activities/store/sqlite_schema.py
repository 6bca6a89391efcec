"""The SQLite schema as an ordered list of migrations, tracked by `PRAGMA user_version`.

To change the schema, append a migration; never edit one that has shipped. Say whether it
is additive: code of the version before it can still use the file after it (a rollback
keeps the file and its data). The file records, for its version, the oldest version whose
code may use it (`schema_compat`), so code older than the file opens it when that allows.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import aiosqlite

from activities.store.base import StoreSchemaTooNew
from activities.store.non_finite import repair_non_finite_documents
from activities.store.search_text import search_fold

log = logging.getLogger("trellis.store")

# A migration step: a statement, or a function for what SQL alone cannot do.
Step = str | Callable[[aiosqlite.Connection], Awaitable[None]]


@dataclass(frozen=True)
class Migration:
    """The steps from one version to the next.

    `additive`: code of the version before it still uses the file rightly after it, and
    what that code writes meanwhile leaves the file right for this code: new tables,
    indexes or nullable columns it neither reads nor must keep up, triggers that keep
    theirs up whoever writes. Not additive: a change of what stored data means, or of what
    every writer must keep up.
    """

    additive: bool
    steps: list[Step]


# Trigger bodies of migration 3 (the change counters): shipped, so never change them.
def _bump_run(run_id: str) -> str:
    return (
        f"INSERT INTO run_changes (run_id, n) VALUES ({run_id}, 1)"
        " ON CONFLICT (run_id) DO UPDATE SET n = n + 1;"
    )


def _bump_workflow(workflow_id: str) -> str:
    return (
        f"INSERT INTO workflow_run_changes (workflow_id, n) VALUES ({workflow_id}, 1)"
        " ON CONFLICT (workflow_id) DO UPDATE SET n = n + 1;"
    )


def _bump_workflow_of_run(run_id: str) -> str:
    # `WHERE true`: SQLite's parser needs it between a SELECT and ON CONFLICT.
    return (
        "INSERT INTO workflow_run_changes (workflow_id, n)"
        f" SELECT workflow_definition_id, 1 FROM runs WHERE id = {run_id} AND true"
        " ON CONFLICT (workflow_id) DO UPDATE SET n = n + 1;"
    )


# Migration 6's: a workflow's owner and grants, from its stored document (`row`: the
# table or NEW). Shipped, so never change it; "dev" is the owner of workflows saved before
# ACLs (access.LEGACY_OWNER). bench/access_check.py times it as the read before the column.
async def add_schedule_id_column(db: aiosqlite.Connection) -> None:
    """`runs.schedule_id`, unless the file has it (a file made by this code, its version
    set back by hand, runs the steps after that version again)."""
    async with db.execute("SELECT name FROM pragma_table_info('runs')") as cursor:
        columns = {row[0] for row in await cursor.fetchall()}
    if "schedule_id" not in columns:
        await db.execute("ALTER TABLE runs ADD COLUMN schedule_id TEXT")


async def add_payload_ref_holder(db: aiosqlite.Connection) -> None:
    """`payload_refs.holder` and `.made_at`, unless the file has them (as above)."""
    async with db.execute("SELECT name FROM pragma_table_info('payload_refs')") as cursor:
        columns = {row[0] for row in await cursor.fetchall()}
    if "holder" not in columns:
        await db.execute("ALTER TABLE payload_refs ADD COLUMN holder TEXT NOT NULL DEFAULT 'run'")
    if "made_at" not in columns:
        await db.execute("ALTER TABLE payload_refs ADD COLUMN made_at TEXT")


async def refold_search_text(db: aiosqlite.Connection) -> None:
    """Fold every workflow's name and description again, as search now folds them."""
    async with db.execute(
        "SELECT id, json_extract(doc, '$.name'), json_extract(doc, '$.description') FROM workflows"
    ) as cursor:
        rows = await cursor.fetchall()
    for workflow_id, name, description in rows:
        await db.execute(
            "UPDATE workflows SET name_fold = ?, description_fold = ? WHERE id = ?",
            (search_fold(name or ""), search_fold(description or ""), workflow_id),
        )


def access_from_document(row: str) -> str:
    return (
        f"json_object('id', {row}.id, 'owner', COALESCE(json_extract({row}.doc, '$.owner'),"
        f" 'dev'), 'grants', json(COALESCE(json_extract({row}.doc, '$.grants'), '[]')))"
    )


# MIGRATIONS[n] takes a database from user_version n to n + 1.
MIGRATIONS: list[Migration] = [
    Migration(
        additive=False,  # the first: code before it has no store
        steps=[
            # Definitions: the name is unique as written (case-sensitive); the *_fold columns
            # hold the case-folded text that search matches against.
            "CREATE TABLE workflows (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
            " name_fold TEXT NOT NULL, description_fold TEXT NOT NULL, updated_at TEXT NOT NULL,"
            " doc TEXT NOT NULL)",
            "CREATE INDEX workflows_updated_at ON workflows (updated_at)",
            "CREATE TABLE workflow_versions (workflow_id TEXT NOT NULL, version INTEGER NOT NULL,"
            " doc TEXT NOT NULL, PRIMARY KEY (workflow_id, version))",
            "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow_definition_id TEXT NOT NULL,"
            " status TEXT NOT NULL, parent_run_id TEXT, started_at TEXT NOT NULL,"
            " idempotency_key TEXT, rev INTEGER NOT NULL, doc TEXT NOT NULL)",
            "CREATE INDEX runs_workflow_started ON runs (workflow_definition_id, started_at)",
            "CREATE INDEX runs_status_started ON runs (status, started_at)",
            "CREATE INDEX runs_parent_started ON runs (parent_run_id, started_at)",
            "CREATE INDEX runs_started ON runs (started_at)",
            "CREATE INDEX runs_idempotency_key ON runs (idempotency_key)",
            "CREATE TABLE node_runs (id TEXT PRIMARY KEY, workflow_run_id TEXT NOT NULL,"
            " started_at TEXT, rev INTEGER NOT NULL, doc TEXT NOT NULL)",
            "CREATE INDEX node_runs_run_started ON node_runs (workflow_run_id, started_at)",
            # AUTOINCREMENT: ids are never reused, even after the newest events are deleted.
            "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,"
            " doc TEXT NOT NULL)",
            "CREATE INDEX events_run_id ON events (run_id, id)",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Payloads kept out of Temporal history (claim check), by content hash.
            "CREATE TABLE payloads (key TEXT PRIMARY KEY, data BLOB NOT NULL)",
        ],
    ),
    Migration(
        # Not additive: code before it writes workflows without updating who may view them.
        additive=False,
        steps=[
            # Who may VIEW each workflow (its owner and every grant), for lists filtered in the
            # query. Workflows from before ACLs belong to the dev-mode caller, the only one.
            "CREATE TABLE workflow_viewers (principal TEXT NOT NULL, workflow_id TEXT NOT NULL,"
            " PRIMARY KEY (principal, workflow_id))",
            "CREATE INDEX workflow_viewers_workflow ON workflow_viewers (workflow_id)",
            "INSERT INTO workflow_viewers (principal, workflow_id)"
            " SELECT 'user:' || COALESCE(json_extract(doc, '$.owner'), 'dev'), id FROM workflows",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Change counters, kept by triggers so that no write can forget them: a run's grows
            # with every write to the run or its node runs, a workflow's with every write to
            # any of its runs or their node runs. A read reuses what it answered while the
            # counter stands (app/read_cache.py). Counters never go back (a deleted run's keeps
            # its count), and a run without a row yet reads as 0.
            "CREATE TABLE run_changes (run_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
            "CREATE TABLE workflow_run_changes (workflow_id TEXT PRIMARY KEY, n INTEGER NOT NULL)"
            " WITHOUT ROWID",
            *(
                f"CREATE TRIGGER runs_{when.lower()} AFTER {when} ON runs BEGIN"
                f" {_bump_run(row + '.id')} {_bump_workflow(row + '.workflow_definition_id')} END"
                for when, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
            ),
            # A run moved to another workflow (never done today) changes both workflows' lists.
            "CREATE TRIGGER runs_moved AFTER UPDATE OF workflow_definition_id ON runs"
            " WHEN OLD.workflow_definition_id IS NOT NEW.workflow_definition_id BEGIN"
            f" {_bump_workflow('OLD.workflow_definition_id')} END",
            *(
                f"CREATE TRIGGER node_runs_{when.lower()} AFTER {when} ON node_runs BEGIN"
                f" {_bump_run(row + '.workflow_run_id')}"
                f" {_bump_workflow_of_run(row + '.workflow_run_id')} END"
                for when, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
            ),
            # A node run moved to another run (never done today) changes both runs.
            "CREATE TRIGGER node_runs_moved AFTER UPDATE OF workflow_run_id ON node_runs"
            " WHEN OLD.workflow_run_id IS NOT NEW.workflow_run_id BEGIN"
            f" {_bump_run('OLD.workflow_run_id')}"
            f" {_bump_workflow_of_run('OLD.workflow_run_id')} END",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Event keys: the workflow keys every event it writes, so a batch written again (a
            # workflow task that ran twice) logs each event once. NULLs are distinct in a
            # UNIQUE index: events without a key (older rows, the API's, the reconciler's)
            # are never taken for repeats.
            "ALTER TABLE events ADD COLUMN key TEXT",
            "CREATE UNIQUE INDEX events_run_key ON events (run_id, key)",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Documents stored with NaN or Infinity (accepted before they were refused) are
            # made valid JSON: SQLite's JSON functions refused them, and with them every
            # read of their workflow's runs.
            repair_non_finite_documents,
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Every request about a run or workflow checks its workflow's access (owner and
            # grants). Read from the document, SQLite parsed the whole definition twice per
            # check: 23 to 40 µs for 20 steps, 140 to 187 µs for 200; 14 to 21 µs from this
            # column (python -m bench.access_check). Kept beside it, by triggers, so that no write
            # can forget it.
            "ALTER TABLE workflows ADD COLUMN access TEXT",
            f"UPDATE workflows SET access = {access_from_document('workflows')}",
            *(
                f"CREATE TRIGGER workflows_access_{name} AFTER {when} ON workflows BEGIN"
                f" UPDATE workflows SET access = {access_from_document('NEW')}"
                " WHERE id = NEW.id; END"
                for name, when in (("insert", "INSERT"), ("update", "UPDATE OF id, doc"))
            ),
        ],
    ),
    Migration(
        # Not additive: code before it folds names as before, which this search misses.
        additive=False,
        steps=[
            # Search folds accents and compatibility forms too (search_text.py): `istanbul`
            # finds `İstanbul`, which casefold alone turned into `i` and a combining dot.
            refold_search_text,
        ],
    ),
    Migration(
        additive=True,  # runs code before it starts name no schedule, as runs before it
        steps=[
            # The schedule that started a run, for a page of its runs (`?scheduleId=`): read
            # from the document, SQLite parsed every run document of the workflow (1.3 s for
            # 20,000 runs, the API's loop held). Runs before it name no schedule.
            add_schedule_id_column,
        ],
    ),
    Migration(
        # Not additive: code before it stores payloads no reference keeps, which a run's
        # delete then takes from under another run using the same bytes.
        additive=False,
        steps=[
            # Which runs' histories carry each large payload (by its workflow id, the run's):
            # a payload goes with the last of them. `''` keeps one for good (base.KEPT): a put
            # that named no run, and every payload stored before this, whose runs are unknown.
            # (IF NOT EXISTS: a file set back by hand runs this again.)
            "CREATE TABLE IF NOT EXISTS payload_refs (key TEXT NOT NULL, run_id TEXT NOT NULL,"
            " PRIMARY KEY (key, run_id)) WITHOUT ROWID",
            "CREATE INDEX IF NOT EXISTS payload_refs_run ON payload_refs (run_id)",
            "INSERT INTO payload_refs (key, run_id) SELECT key, '' FROM payloads"
            " WHERE key NOT IN (SELECT key FROM payload_refs)",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # What each reference is from (base.PayloadHolder) and when it was made: a
            # schedule's firing refers to its own payloads under its trigger workflow's id, no
            # run's, and they go a while after it was made (app/firing_payloads.py). Those
            # before this are a run's (NULL made_at).
            add_payload_ref_holder,
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # Who asked to fire a schedule now, until the firing's run claims it (Temporal's
            # trigger carries no caller; activities/scheduling.py). (IF NOT EXISTS: as above.)
            "CREATE TABLE IF NOT EXISTS schedule_fires (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " schedule_id TEXT NOT NULL, requested_at TEXT NOT NULL, claimed_by TEXT,"
            " requested_by TEXT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS schedule_fires_requested"
            " ON schedule_fires (schedule_id, requested_at)",
        ],
    ),
    Migration(
        additive=True,
        steps=[
            # The tasks A2A steps started, while their steps follow them (sqlite_a2a_tasks.py):
            # a worker cancels one whose step is gone (its worker killed), which no one else
            # knows the id of. Few rows: a step's goes when it is done with its task.
            "CREATE TABLE IF NOT EXISTS a2a_tasks (node_run_id TEXT NOT NULL, agent TEXT NOT NULL,"
            " task_id TEXT NOT NULL, run_id TEXT NOT NULL, noted_at TEXT NOT NULL,"
            " claimed_until TEXT, first_failed_at TEXT, PRIMARY KEY (node_run_id, agent, task_id))"
            " WITHOUT ROWID",
        ],
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)

# Indexes are kept apart from the schema version: each start creates those this code
# reads by and drops those they replace. A release that changes only indexes leaves the
# file at its version, so the release before it still opens it (a rollback), and the
# next start puts this code's indexes back. No query names an index.
INDEXES = (
    # Lists of runs order by (started_at, id): with `id` in the index a page is read in
    # order from it, not sorted afresh (page 2,000 of a workflow's 50,000 runs took 140 ms,
    # 2 ms now), and a workflow's runs in one status have their own (their count walked
    # every run in that status, of every workflow: 117 ms at 100,000 runs, now none).
    "CREATE INDEX IF NOT EXISTS runs_workflow_started_id"
    " ON runs (workflow_definition_id, started_at, id)",
    "CREATE INDEX IF NOT EXISTS runs_workflow_status_started_id"
    " ON runs (workflow_definition_id, status, started_at, id)",
    "CREATE INDEX IF NOT EXISTS runs_status_started_id ON runs (status, started_at, id)",
    "CREATE INDEX IF NOT EXISTS runs_parent_started_id ON runs (parent_run_id, started_at, id)",
    "CREATE INDEX IF NOT EXISTS runs_started_id ON runs (started_at, id)",
    # Only runs a schedule started are in it (`schedule_id = ?` implies the condition).
    "CREATE INDEX IF NOT EXISTS runs_schedule_started_id ON runs (schedule_id, started_at, id)"
    " WHERE schedule_id IS NOT NULL",
    # The firings' references, oldest first, for their sweep (no run's is in it).
    "CREATE INDEX IF NOT EXISTS payload_refs_firing_made ON payload_refs (made_at)"
    " WHERE holder = 'firing'",
)
# Replaced by the ones above (the same columns, less `id`).
REPLACED_INDEXES = (
    "runs_workflow_started",
    "runs_status_started",
    "runs_parent_started",
    "runs_started",
)


# For each version the file has been at, the oldest version whose code may use it. Kept
# apart from the schema version, as the indexes are: made by any start that finds it
# missing, so a file this code opens is still opened by the releases before it.
COMPAT_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_compat (version INTEGER PRIMARY KEY,"
    " oldest_code INTEGER NOT NULL)"
)


def oldest_code(version: int, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """The oldest version whose code may use a file at `version`: that of the last
    migration up to it that was not additive."""
    return max(
        (n + 1 for n, step in enumerate(migrations[:version]) if not step.additive), default=0
    )


async def migrate(db: aiosqlite.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Apply pending migrations, then make this code's indexes; call inside a write
    transaction (`BEGIN IMMEDIATE`). A file newer than `migrations` is used as it is when
    it says this code may use it, else refused (StoreSchemaTooNew)."""
    version = len(migrations)
    # Read inside the transaction: two processes starting at once must not both migrate.
    async with db.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    current = int(row[0]) if row else 0
    if current > version:
        await _check_newer(db, current, version)
    else:
        for migration in migrations[current:]:
            for step in migration.steps:
                if isinstance(step, str):
                    # One statement at a time: executescript() would commit the open transaction.
                    await db.execute(step)
                else:
                    await step(db)
        if current != version:
            await db.execute(f"PRAGMA user_version = {version}")
            # Said once: a migrated file is refused by a release before it, unless the
            # migrations were additive and that release reads schema_compat (docs/operations.md).
            # A new file is no news (DEBUG): at INFO it came before the one line a start
            # that cannot go on prints (a worker without Temporal, a bad namespace).
            if current == 0:
                log.debug("store schema created at version %d", version)
            else:
                log.info("store schema migrated from version %d to %d", current, version)
        # Every start, not only a migration: files migrated before the table get their row.
        await db.execute(COMPAT_TABLE)
        await db.execute(
            "INSERT OR REPLACE INTO schema_compat (version, oldest_code) VALUES (?, ?)",
            (version, oldest_code(version, migrations)),
        )
    for statement in INDEXES:
        await db.execute(statement)
    for name in REPLACED_INDEXES:
        await db.execute(f"DROP INDEX IF EXISTS {name}")


async def _check_newer(db: aiosqlite.Connection, current: int, version: int) -> None:
    """A file a newer release migrated: used as it is if it says code at `version` may,
    else refused. A file without a say (a release before schema_compat) is refused."""
    oldest: int | None = None
    async with db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_compat'"
    ) as cursor:
        has_table = await cursor.fetchone() is not None
    if has_table:
        async with db.execute(
            "SELECT oldest_code FROM schema_compat WHERE version = ?", (current,)
        ) as cursor:
            row = await cursor.fetchone()
        oldest = int(row[0]) if row else None
    if oldest is None or oldest > version:
        raise StoreSchemaTooNew(
            f"the store's schema version {current} is newer than this code ({version}),"
            f" and changes that code at {version} cannot use: roll forward, or restore the"
            ' file saved before the upgrade (docs/operations.md, "Deploys, mixed versions'
            ' and rollbacks")'
        )
    log.warning(
        "store schema version %d is newer than this code (%d); code from version %d on may"
        " use it, so it is used as it is, not migrated: roll forward when you can",
        current,
        version,
        oldest,
    )
