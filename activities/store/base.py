"""The narrow store interface: exactly the queries the API, activities and reconciler make.

SQLite (embedded default) and MongoDB implement it; one contract test suite checks both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from activities.store.access import Grant, WorkflowAccess
from activities.store.records import (
    A2ATaskRef,
    AbandonedA2ATask,
    EndedRunsDeleted,
    FiringRefsDeleted,
    GatedRun,
    NodeRunRecord,
    RunHeader,
    RunRecord,
    VersionSummary,
    WorkflowRecord,
    WorkflowVersionRecord,
)
from temporal_workflows.contracts import Identity

# The reference that keeps a large payload for good (no run id is empty): one put for no
# run, or kept from before runs' references were recorded.
KEPT = ""


class PayloadHolder(StrEnum):
    """What a large payload's reference is from, which says how long it keeps it."""

    # A run's workflow (its id is the run id): until the run is deleted.
    RUN = "run"
    # A schedule's own action argument (the id of the workflow it starts, no run): until the
    # schedule is deleted (`end_schedule_payloads`).
    SCHEDULE = "schedule"
    # A schedule's firing (its trigger workflow, no run), or handed over by a delete (a
    # schedule's own argument, a deleted workflow's runs'): until Temporal has closed the
    # workflow that may still read it (`delete_firing_payloads`).
    FIRING = "firing"


# How long a schedule's fire-now request is kept (`record_schedule_fire`): it is claimed
# within a minute of being made, and the activity that claims it retries for minutes.
FIRE_REQUESTS_KEPT = timedelta(hours=1)

# The principals a list is filtered for (`user:alice`, `role:ops`); None: everything.
Viewer = frozenset[str] | None


class StoreError(Exception):
    """The store failed (I/O, driver); mapped to 500 `database_error`."""


class StoreUnavailable(StoreError):
    """The store cannot be reached now (connection lost, locked past its timeout); mapped to
    503 `database_error`: the same request may succeed in a moment."""


class StoreUrlInvalid(StoreError):
    """The store URL cannot be used as written (its driver refused to parse it): a setting
    to correct, not a store to wait for."""


class StoreSchemaTooNew(StoreError):
    """The store's schema is newer than this code, changed in a way this code cannot use: a
    release to roll forward to (or a file to restore), not a store to wait for."""


class DuplicateNameError(StoreError):
    """Another workflow already has this name; mapped to 409 `duplicate_entry`."""


class ReadTooLarge(Exception):
    """A read whose documents, as stored, come to more than it may hold: refused before it
    is all loaded (a run's 20,000 node runs of 110 KB each took an API 22 GB to answer)."""

    def __init__(self, limit: int, documents: int) -> None:
        super().__init__(f"more than {limit} bytes in its first {documents} documents")
        self.limit = limit
        self.documents = documents


class ChangedMeanwhile(StoreError):
    """A conditional write found what it was to change changed since the caller read it;
    nothing was written (the API answers 412 `precondition_failed`)."""


class Store(Protocol):
    # Whether a smaller event id can never become readable after a larger one was read
    # (SQLite: one writer at a time takes ids in commit order). MongoDB takes an event's id
    # from a counter before inserting it, so a slower writer's smaller id may land later.
    ids_visible_in_order: bool

    async def connect(self) -> None:
        """Open connections and create/migrate the schema and indexes."""

    async def close(self) -> None: ...

    async def ping(self) -> None:
        """Raise StoreError when the store is unreachable."""

    # -- definitions -------------------------------------------------------
    async def create_workflow(self, record: WorkflowRecord) -> None:
        """Insert a definition and its version 1; DuplicateNameError on a taken name."""

    async def get_workflow(self, workflow_id: str) -> WorkflowRecord | None: ...

    async def get_workflow_access(self, workflow_id: str) -> WorkflowAccess | None:
        """The workflow's id, owner and grants, without parsing its definition."""

    async def list_workflows(
        self, query: str | None, page: int, per_page: int, viewer: Viewer = None
    ) -> tuple[list[WorkflowRecord], int]:
        """Newest-updated first; `query` matches name or description, case-insensitive.

        With a `viewer` (principals), only workflows one of them may VIEW, in the page and
        in the total alike.
        """

    async def update_workflow(
        self, record: WorkflowRecord, new_version: bool, *, read: WorkflowRecord | None = None
    ) -> None:
        """Replace a definition; when `new_version`, also keep `record.version` as a version.

        The stored owner and grants are kept whatever `record` says (a save racing a
        change of grants never undoes it). With `read`, only over the record as it was read
        (its version, enabled and updated_at, compared and written in one step): else, or
        when it is gone, ChangedMeanwhile and nothing written. Two saves of one read never
        both land, so no version number is given twice and no save is lost.
        """

    async def set_workflow_grants(
        self, workflow_id: str, grants: list[Grant], *, read: list[Grant] | None = None
    ) -> bool:
        """Replace a workflow's grants (the owner stays); False when it does not exist.
        With `read`, only while its grants are still those, checked and written in one
        step; `ChangedMeanwhile` (nothing written) when they are not."""

    async def delete_workflow(self, workflow_id: str) -> bool:
        """Delete a definition with its versions, runs, node runs and events; its runs' large
        payloads go to `delete_firing_payloads`, as made now (a run may still be closing in
        Temporal and read them)."""

    async def get_workflow_version(
        self, workflow_id: str, version: int
    ) -> WorkflowVersionRecord | None: ...

    async def list_workflow_versions(self, workflow_id: str) -> list[VersionSummary]:
        """All versions, oldest first, summarised (their definitions are not read whole)."""

    # -- runs --------------------------------------------------------------
    async def insert_run(self, record: RunRecord) -> RunRecord:
        """Insert a run; when one with this id exists, return it unchanged (idempotent).

        Returns `record` itself when this call inserted it (a starter tells its own
        record from one a first use of its key stored), else the stored one."""

    async def delete_unstarted_run(self, run_id: str) -> bool:
        """Delete a run only while it is `pending` at most at the start claim's rev (no
        workflow wrote it, no cancel ended it), with its node runs, events and the payloads
        only it used (its start's own, for one); whether it
        did. For a starter taking back the record it just wrote for a start Temporal
        cannot make (`RunIdTaken`): nothing else may read as deleted."""

    async def update_run(
        self,
        run_id: str,
        rev: int,
        changes: dict[str, Any],
        event: dict[str, Any] | None = None,
        *,
        newer_only: bool = False,
        event_key: str | None = None,
        ending: bool = False,
    ) -> bool:
        """Apply snake_case field changes when `rev` >= the stored rev; False otherwise.

        When applied, `event` is appended to the run's log in the same write (under
        `event_key`, as `append_event`). With `newer_only`, only when `rev` > the stored
        rev: of writers racing to make the same correction (two reconcilers), exactly one
        applies. An `ending` write (the run's end, from its workflow) applies also over a
        newer rev the workflow wrote (below `WORKFLOW_REVS_BELOW`; never over the API's or
        the reconciler's) when its status differs from the stored one and a later
        workflow task wrote it (its `end_order` greater than the stored end's): a task
        that wrote an end and then failed (Temporal refused its completion: a cancel came
        meanwhile) runs again and ends otherwise; its end is the one Temporal keeps, and
        the first one landing again later does not take its place back.

        A write whose `changes` name its Temporal `execution` is taken whatever the revs
        when that execution is newer than the run's, refused when the run went on from
        it (activities/store/executions.py); the same holds for node runs.
        """

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self,
        workflow_id: str | None,
        *,
        status: str | None = None,
        parent_run_id: str | None = None,
        schedule_id: str | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> tuple[list[RunHeader], int]:
        """Newest first (by startedAt), without their definition snapshots; with
        `schedule_id`, only the runs that schedule started."""

    async def delete_ended_runs(self, ended_before: datetime, limit: int) -> EndedRunsDeleted:
        """Delete at most `limit` runs whose status is terminal (completed, failed,
        cancelled) and that ended before `ended_before` (`finished_at`; `updated_at` for a
        run that has none), with their node runs, events and the large payloads no other
        run uses (`put_payload`), in one write: the run retention's batch. An open run is
        never deleted, whatever its age.
        Idempotent: callers racing each delete a run at most once between them."""

    async def list_unstarted_runs(self, started_before: datetime) -> list[RunRecord]:
        """Runs still `pending` that were recorded before the given time, oldest first: the
        reconciler's look for runs the API recorded but never started."""

    async def list_gated_runs(
        self, status: str, limit: int, viewer: Viewer = None
    ) -> list[GatedRun]:
        """Runs in one status that have open gates, oldest first, at most `limit` (the
        approvals inbox, the gates gauge); with a `viewer`, only runs of workflows one of
        its principals may VIEW."""

    # -- node runs ---------------------------------------------------------
    async def upsert_node_run(self, record: NodeRunRecord) -> bool:
        """Insert or replace when `record.rev` >= the stored rev; False when stale."""

    async def merge_node_run(
        self,
        fields: dict[str, Any],
        events: Sequence[dict[str, Any]] = (),
        event_keys: Sequence[str | None] = (),
    ) -> bool:
        """Merge snake_case `fields` (with `id`, `rev`) into a node run, creating it if new.

        Rev-guarded like `upsert_node_run`; when applied, `events` are appended in the same
        write, the i-th under `event_keys[i]` when given (as `append_event`). The hot path
        of every step, so one round trip where the store allows it. Not applied (False)
        when its run is not in the store: deleted with its workflow, whose runs' last
        writes may land after the delete (the worker down, say).

        A write refused over a newer rev (False) that carries an attempt's start still
        fills that start into a stored node run showing no attempt (`start_missed`), in
        one atomic change of that node run: `attempt`, and `started_at` and
        `input_snapshot` where it has none; status, rev and the rest stay, and the
        write's events are not logged.

        A `cancelled` write over a node run waiting to retry (`running` with its failed
        attempt's error) keeps that error: `cancelled_after_failure` in documents.py.
        """

    async def list_node_runs(
        self, run_ids: list[str], max_bytes: int | None = None
    ) -> list[NodeRunRecord]:
        """Node runs of the given runs, ordered by startedAt ascending (unstarted last).
        ReadTooLarge once their stored documents pass `max_bytes` (when given)."""

    async def node_run_page(
        self, run_id: str, offset: int, limit: int, max_bytes: int | None = None
    ) -> tuple[list[NodeRunRecord], int]:
        """A slice of a run's node runs in `list_node_runs` order, and how many it has.
        ReadTooLarge once the slice's stored documents pass `max_bytes` (when given)."""

    async def node_run_counts_of(self, run_ids: list[str]) -> dict[str, dict[str, int]]:
        """By run: how many of its node runs are in each status (statuses with none left
        out; a run without node runs: `{}`), in one read."""

    async def get_node_run(self, node_run_id: str) -> NodeRunRecord | None: ...

    # -- change counters (a read may reuse its answer while they stand) ----
    async def run_changes(self, run_id: str) -> int | None:
        """A count that grows with every write to the run or to one of its node runs (0 for
        a run never written); None when this store keeps no such count."""

    async def workflow_run_changes(self, workflow_id: str) -> int | None:
        """The same over every run of the workflow and their node runs."""

    async def run_was_deleted(self, run_id: str) -> bool:
        """Whether the store held the run once and holds it no more (deleted by the run
        retention or with its workflow): its change counter outlived it. False where the
        store keeps no counters (MongoDB): there a deleted run leaves no trace."""

    # -- run events (for the live stream) ----------------------------------
    async def append_event(self, run_id: str, event: dict[str, Any], key: str | None = None) -> int:
        """Append an event to a run's log; return its id, monotonic per store.

        With a `key`, an event the run's log already holds under that key is not appended
        again (its id is returned): the workflow keys its events so that a batch written
        twice logs each once. Events without a key are always appended.
        """

    async def list_events(self, run_id: str, after_id: int, limit: int) -> list[dict[str, Any]]:
        """Events of a run with id > after_id, in order; each carries its `id`."""

    async def last_event_id(self, run_id: str) -> int:
        """The id of the run's newest event; 0 when it has none."""

    async def delete_events(self, run_id: str) -> None:
        """Delete a log's events (a deleted schedule's skips); their ids are never reused."""

    def watch_event_runs(self) -> AsyncIterator[set[str]]:
        """The ids of runs that got events, as events are written by any process.

        Yields an empty set first, once it is listening. A doorbell for live streams
        (they read the events themselves), so it may ring for nothing; it raises
        StoreError when the store cannot be followed.
        """
        ...

    # -- large payloads (claim check) ----------------------------------------
    async def put_payload(
        self,
        key: str,
        data: bytes,
        run_id: str | None = None,
        holder: PayloadHolder = PayloadHolder.RUN,
    ) -> None:
        """Keep a Temporal payload too large for history under its content key (idempotent),
        with a reference from the run whose history carries it, in one write (`holder`: from
        a schedule or a firing instead, `run_id` its workflow's id; a repeat renews the time
        it was made).

        A payload goes when the last run referring to it is deleted (`delete_ended_runs`,
        `delete_unstarted_run`), in that delete's write, or later (`delete_workflow`); a put of the
        same bytes racing the delete leaves it present. A run's put is the firings' sweep's
        when the run has no record or a delete handed its references over (its workflow
        deleted while it was still closing). One put with no run (`run_id` None:
        the SDK named no workflow) keeps it for good, as every payload stored before
        references were (`KEPT`).
        """

    async def get_payload(self, key: str) -> bytes | None:
        """A payload kept by `put_payload`; None when there is none under the key."""

    async def firing_payload_holders(
        self, made_before: datetime, after: str, limit: int
    ) -> list[str]:
        """Up to `limit` workflow ids, in order, after `after`, with firings' references
        (`PayloadHolder.FIRING`) made before `made_before`."""

    async def delete_firing_payloads(
        self, made_before: datetime, limit: int, workflow_ids: Sequence[str] | None = None
    ) -> FiringRefsDeleted:
        """Delete up to `limit` references of firings (`PayloadHolder.FIRING`) made before
        `made_before` (of these workflows only, unless None), with the payloads nothing refers
        to any more, in one write."""

    async def adopt_older_firing_refs(self, limit: int) -> int:
        """Hand up to `limit` references a worker before firings' were recorded wrote for a
        schedule's firing to `delete_firing_payloads`, as made now; how many. It wrote them
        as a run's, with no time made, under the firing's workflow id
        (`sched-…-run-<second>`, store/firing_ids.py), which no run has: before SQLite
        schema version 11, and onto a migrated store while it ran on in a rolling deploy.
        A reference whose id a run has stays the run's."""

    async def end_schedule_payloads(self, workflow_id: str) -> None:
        """Hand a deleted schedule's own references (under the id of the workflow it
        starts) to `delete_firing_payloads`, as made now: a firing still running reads them."""

    async def replace_schedule_payloads(
        self, workflow_id: str, keep: Sequence[str], made_before: datetime
    ) -> None:
        """After a schedule's update: hand its own references (under the id of the workflow
        it starts) made before `made_before` to `delete_firing_payloads`, as made now,
        except those to `keep` (the argument it carries now), which stay the schedule's,
        renewed (taken back from a concurrent update that found them replaced). Those made
        since are a concurrent update's, whose own call tells."""

    # -- schedules' fire-now requests ----------------------------------------
    async def record_schedule_fire(
        self, schedule_id: str, requested_by: Identity, requested_at: datetime
    ) -> None:
        """Keep who asked to fire the schedule now, and when (Temporal's trigger carries no
        caller); the schedule's requests older than `FIRE_REQUESTS_KEPT` go in the same
        write."""

    async def claim_schedule_fire(
        self, schedule_id: str, firing_id: str, since: datetime, until: datetime
    ) -> Identity | None:
        """Who asked for the firing `firing_id`: the request it claimed before (a retry),
        else the newest of the schedule's requests made in [`since`, `until`) that no
        firing has claimed, claimed now (of two firings, one takes it); None when none is."""

    async def delete_schedule_fires(self, schedule_id: str) -> None:
        """Delete a deleted schedule's requests (a schedule made anew under its id has none)."""

    # -- tasks A2A steps started (app/a2a_task_sweep.py cancels those left behind) ----
    async def record_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        """Note a task an A2A step started and follows, followed at `at` (noted again: only
        that time moves on)."""

    async def follow_a2a_task(self, task: A2ATaskRef, at: datetime) -> None:
        """The step still follows the noted task at `at` (a note gone meanwhile stays gone)."""

    async def settle_a2a_task(self, task: A2ATaskRef, now: datetime) -> bool:
        """Its step is done with the task (it ended, or the step cancels it now): forget
        it, and True; False, forgetting nothing, while a sweep holds it (claimed until after
        `now`): that sweep cancels it. A task never noted: True."""

    async def claim_abandoned_a2a_tasks(
        self, now: datetime, lease: timedelta, limit: int, *, followed_before: datetime
    ) -> list[AbandonedA2ATask]:
        """Up to `limit` noted tasks whose step is gone, least lately followed first, claimed
        until `now + lease` (of sweeps racing, one claims each): no step said it follows
        them after `followed_before`, their run ended (or is not in the store: deleted) or
        their node run did, and no sweep holds them."""

    async def release_a2a_task(self, task: A2ATaskRef, failed_at: datetime) -> None:
        """A sweep did not reach the task's agent: unclaimed for the next sweep; the time
        of the first such failure is kept (`AbandonedA2ATask.first_failed_at`)."""

    async def forget_a2a_task(self, task: A2ATaskRef) -> None:
        """A sweep cancelled the task (or gave up on it): it goes, claimed or not."""
