"""Create, update, toggle and delete workflow definitions: normalise, validate, version."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol
from uuid import uuid4

from activities.store.access import LEGACY_OWNER
from activities.store.base import ChangedMeanwhile, DuplicateNameError, Store
from activities.store.records import WorkflowRecord, utcnow
from app.errors import Conflict, DuplicateEntry, NotFound
from app.schemas.workflow import WorkflowCreate, WorkflowUpdate
from app.services.beside_loop import beside_the_loop
from app.services.turns import Turns
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.validation import DefinitionError, Problem, normalise


class ExecutorChecker(Protocol):
    """The part of the executor catalog a save needs."""

    def unknown_executor_problems(self, spec: WorkflowSpec) -> list[Problem]: ...

    async def rediscover_for(self, spec: WorkflowSpec) -> None: ...


# A save read again this often, each time another landed first, answers 409.
SAVE_ATTEMPTS = 20
# Up to this many seconds per lost attempt before the next (at most ~1 s for the last).
SAVE_BACKOFF_SECONDS = 0.005


_SAVES = Turns()


def new_id() -> str:
    return str(uuid4())


def spec_of(data: WorkflowSpec) -> WorkflowSpec:
    """Just the definition fields of a create body or a record."""
    return WorkflowSpec.model_validate(data.model_dump(include=set(WorkflowSpec.model_fields)))


class RunCanceller(Protocol):
    """Cancels a workflow's open runs (through Temporal) before its records go."""

    async def cancel_open_runs(self, workflow_id: str) -> list[str]: ...


class ScheduleRemover(Protocol):
    """Deletes a workflow's schedules (in Temporal) before its records go."""

    async def delete_schedules(self, workflow_id: str) -> list[str] | None: ...

    async def delete_schedule_records(
        self, workflow_id: str, schedule_ids: list[str] | None
    ) -> None: ...


@dataclass
class DefinitionService:
    store: Store
    catalog: ExecutorChecker
    run_canceller: RunCanceller | None = None
    schedule_remover: ScheduleRemover | None = None

    async def _validated(self, spec: WorkflowSpec, *, check_executors: bool) -> WorkflowSpec:
        """Assign missing node ids and apply every save-time rule (DefinitionError → 400),
        the executor catalog's with the others: every problem is reported at once."""
        problems: list[Problem] = []
        try:
            # Off the event loop: a large definition's expressions take seconds to check,
            # and every other request (probes included) waited for them.
            spec = await beside_the_loop(normalise, spec, new_id)
        except DefinitionError as invalid:
            problems = list(invalid.problems)
        if check_executors:
            await self.catalog.rediscover_for(spec)
            problems += self.catalog.unknown_executor_problems(spec)
        if problems:
            raise DefinitionError(problems)
        return spec

    async def create(self, body: WorkflowCreate, owner: str = LEGACY_OWNER) -> WorkflowRecord:
        """Store a new definition as version 1, always disabled, owned by `owner`."""
        spec = await self._validated(spec_of(body), check_executors=True)
        now = utcnow()
        record = WorkflowRecord(
            id=new_id(),
            enabled=False,
            version=1,
            created_at=now,
            updated_at=now,
            owner=owner,
            saved_by=owner,
            **dict(spec),
        )
        await self._saving(record.name, self.store.create_workflow(record))
        return record

    async def update(
        self,
        current: WorkflowRecord,
        body: WorkflowUpdate,
        expected: Callable[[WorkflowRecord], None] = lambda _: None,
        saved_by: str | None = None,
    ) -> WorkflowRecord:
        """Apply the given fields; a changed definition becomes a new version.

        Written only over the record as read (see `_over_latest`): saves at once each get
        a version of their own, and none undoes a toggle that landed in between.
        `expected` raises when the record as read is not the one the caller's change is
        based on (If-Match): checked on each read the write is made over, so the check
        and the write are one step. A new version records `saved_by`.
        """

        async def updated(read: WorkflowRecord) -> _Save | None:
            expected(read)
            return await self._updated(read, body, saved_by)

        return await self._over_latest(current, updated)

    async def _updated(
        self, current: WorkflowRecord, body: WorkflowUpdate, saved_by: str | None
    ) -> _Save | None:
        changes = body.spec_changes()
        spec = current.spec()
        if changes:
            merged = spec.model_dump(by_alias=False) | {k: _plain(v) for k, v in changes.items()}
            # Executors are checked only when nodes are sent, so renaming a workflow
            # never fails because the catalog lost a tool since the last save.
            spec = await self._validated(
                WorkflowSpec.model_validate(merged), check_executors="nodes" in changes
            )
        definition_changed = spec.model_dump() != current.spec().model_dump()
        enabled = current.enabled if body.enabled is None else body.enabled
        if not definition_changed and enabled == current.enabled:
            return None
        record = current.model_copy(
            update={
                **dict(spec),
                "enabled": enabled,
                "version": current.version + 1 if definition_changed else current.version,
                "saved_by": saved_by if definition_changed else current.saved_by,
                "updated_at": utcnow(),
            }
        )
        return _Save(record, new_version=definition_changed)

    async def _over_latest(
        self, current: WorkflowRecord, change: Callable[[WorkflowRecord], Awaitable[_Save | None]]
    ) -> WorkflowRecord:
        """Write `change(current)` only over `current` as stored; when another save landed
        first, read the record again and apply the change to that. A request's fields win
        over what was there, as they would one after the other. Within this process a
        workflow's saves take turns (each validates for a while, and 40 at once lost to
        each other 20 times in a row); across API processes the retry remains."""
        async with _SAVES.turn(current.id):
            return await self._saved_over_latest(current, change)

    async def _saved_over_latest(
        self, current: WorkflowRecord, change: Callable[[WorkflowRecord], Awaitable[_Save | None]]
    ) -> WorkflowRecord:
        for attempt in range(1, SAVE_ATTEMPTS + 1):
            save = await change(current)
            if save is None:
                return current
            try:
                await self._saving(
                    save.record.name,
                    self.store.update_workflow(
                        save.record, new_version=save.new_version, read=current
                    ),
                )
            except ChangedMeanwhile:
                latest = await self.store.get_workflow(current.id)
                if latest is None:
                    raise NotFound(f"Workflow {current.id!r} not found") from None
                current = latest
                # A moment, longer after each loss and different for each save: read again
                # at once, the saves lost to each other in step (40 at once: some lost 20).
                await asyncio.sleep(random.uniform(0, SAVE_BACKOFF_SECONDS * attempt))
                continue
            return save.record
        raise Conflict(f"Workflow {current.id!r} is being changed by others; try again")

    async def _saving(self, name: str, write: Awaitable[None]) -> None:
        """Await a store write; a taken name becomes 409 naming it."""
        try:
            await write
        except DuplicateNameError:
            raise DuplicateEntry(f"A workflow named {name!r} already exists") from None

    async def toggle(self, current: WorkflowRecord, enabled: bool) -> WorkflowRecord:
        """Enable or disable; never a new version (and never undone by a save at once)."""

        async def toggled(read: WorkflowRecord) -> _Save | None:
            if enabled == read.enabled:
                return None
            record = read.model_copy(update={"enabled": enabled, "updated_at": utcnow()})
            return _Save(record, new_version=False)

        return await self._over_latest(current, toggled)

    async def delete(self, current: WorkflowRecord) -> None:
        """Delete a definition with its versions and runs.

        It is disabled first: a run triggered while its open runs are cancelled and its
        records deleted (seconds, for many runs) would start in Temporal and lose its
        record with the rest, running on with nothing in Trellis to show or stop it.
        """
        was_enabled = current.enabled
        if was_enabled:
            current = await self.toggle(current, False)
        try:
            schedule_ids = await self.on_workflow_delete(current)
        except Exception:
            # Refused before any record went (Temporal down with runs to cancel): enabled
            # again, as it was; its schedules may be gone.
            if was_enabled:
                with contextlib.suppress(Exception):
                    await self.toggle(current, True)
            raise
        if not await self.store.delete_workflow(current.id):
            raise NotFound(f"Workflow {current.id!r} not found")
        if self.schedule_remover is not None:
            # After the records: with those a create made meanwhile (schedule_notes.py).
            await self.schedule_remover.delete_schedule_records(current.id, schedule_ids)

    async def on_workflow_delete(self, current: WorkflowRecord) -> list[str] | None:
        """Hook run before a definition's records are deleted; the ids of the schedules
        it deleted, whose skips go after the records (None: Temporal did not answer).

        The run engine extends this to cancel the workflow's running runs first, so no
        activity writes a node run for a definition that no longer exists.
        """
        # Schedules first: a firing between the cancel and the delete would start a run.
        schedule_ids: list[str] | None = []
        if self.schedule_remover is not None:
            schedule_ids = await self.schedule_remover.delete_schedules(current.id)
        if self.run_canceller is not None:
            await self.run_canceller.cancel_open_runs(current.id)
        return schedule_ids


@dataclass(frozen=True)
class _Save:
    """A record to write, and whether it is a new version of the definition."""

    record: WorkflowRecord
    new_version: bool


def _plain(value: object) -> object:
    """Models as plain snake_case data, so they merge into a dumped spec."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(by_alias=False) if dump else value
