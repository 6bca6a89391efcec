"""Recurring runs through Temporal Schedules; Temporal is the source of truth for schedules.

Each schedule starts the `TrellisScheduleTrigger` workflow, whose activity starts the
run (`triggerSource: "schedule"`) or records why it did not. The schedule's action
argument keeps the configuration as given (Temporal keeps a cron only as calendars).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCStatusCode

from activities.scheduling import forget_schedule, skip_log_key
from activities.store.base import Store
from activities.store.records import WorkflowRecord
from app.errors import Conflict, NotFound, ScheduleRefused
from app.schemas.schedule import (
    OverlapPolicy,
    ScheduleActionPublic,
    ScheduleCreate,
    ScheduleList,
    SchedulePublic,
    ScheduleSkip,
    ScheduleSkipList,
)
from app.services import schedule_pause
from app.services.idempotency import Asked
from app.services.precondition import content_tag, holds_to_a_tag, require_match, stale
from app.services.schedule_argument import release_replaced_argument
from app.services.schedule_bound import BOUND
from app.services.schedule_key import (
    CREATOR,
    MEMO,
    create_request,
    keyed_id,
    mark_deleted,
    require_first_request,
)
from app.services.schedule_notes import note_making, require_workflow_kept
from app.services.schedule_timing import kept_as, require_firing, schedule_spec, temporal_call
from app.services.schedule_update import update_over
from temporal_workflows import search_attributes
from temporal_workflows.contracts import Identity
from temporal_workflows.schedule_trigger import (
    SCHEDULE_WORKFLOW_TYPE,
    ScheduleTriggerInput,
    trigger_workflow_id,
)

OVERLAP: dict[OverlapPolicy, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "buffer_all": ScheduleOverlapPolicy.BUFFER_ALL,
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,
    "terminate_other": ScheduleOverlapPolicy.TERMINATE_OTHER,
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
}
OVERLAP_NAMES: dict[ScheduleOverlapPolicy, OverlapPolicy] = {v: k for k, v in OVERLAP.items()}

DESCRIBE_CONCURRENCY = 16
# A schedule's newest runs read to name its recent firings' runs: Temporal keeps the last
# 10 firings, and a skip or a retried start makes room to spare.
FIRING_RUNS_READ = 20
# What a schedule's firing changes by itself: not in its ETag, so a PUT based on a read is
# refused for a change someone made, never because the schedule fired meanwhile.
FIRINGS = {
    "num_actions",
    "num_actions_skipped_overlap",
    "num_actions_missed_catchup_window",
    "next_action_times",
    "recent_actions",
}


# How much of the caller's name a pause or unpause note carries.
NOTE_NAME_CHARS = 200


def schedule_tag(schedule: SchedulePublic) -> str:
    """The schedule's ETag: its settings, state, note and last update as the GET shows them."""
    return content_tag(schedule, exclude=FIRINGS)


def schedule_prefix(workflow_id: str) -> str:
    return f"sched-{workflow_id}-"


def schedules_query(workflow_id: str) -> str:
    """The visibility query listing the workflow's schedules."""
    return f"{search_attributes.DEFINITION_ID.name} = '{workflow_id}'"


@dataclass
class ScheduleService:
    client: Client
    store: Store
    task_queue: str
    default_gate_timeout_seconds: float | None = None
    # Who asks: a schedule create's Idempotency-Key is the caller's own.
    created_by: Identity | None = None
    # The caller's `sub` (`dev` in dev mode): recorded as the creator, named in pause notes.
    requested_by: str | None = None
    # TRELLIS_MAX_SCHEDULES_PER_WORKFLOW; None: no bound.
    max_per_workflow: int | None = None

    async def create(
        self, workflow: WorkflowRecord, body: ScheduleCreate, idempotency_key: str | None = None
    ) -> SchedulePublic:
        """Create a Temporal Schedule for the workflow (paused when asked); under an
        `Idempotency-Key`, a repeat answers the schedule its first use made."""
        schedule_id, keyed = f"{schedule_prefix(workflow.id)}{uuid.uuid4().hex[:12]}", None
        memo: dict[str, Any] = {CREATOR: self.requested_by}
        if idempotency_key is not None:
            prefix = schedule_prefix(workflow.id)
            schedule_id = await keyed_id(self.store, prefix, workflow.id, idempotency_key)
            keyed = memo[MEMO] = create_request(body, self.created_by)
        await require_firing(self.client, self.task_queue, body)  # a bad cron is 400 first
        # Counted with this process's other creates of the workflow in flight (schedule_bound.py).
        with BOUND.creating(workflow.id) as in_flight:
            await self._require_room(workflow, schedule_id if keyed else None, in_flight)
            # Noted first, read again after: a delete of the workflow meanwhile finds the
            # schedule, or this finds the workflow gone (app/services/schedule_notes.py).
            await note_making(self.store, workflow.id, schedule_id)
            await self._made(workflow, schedule_id, body, memo, keyed)
        await require_workflow_kept(self.client, self.store, workflow.id, schedule_id)
        return await self.get(schedule_id)

    async def _made(
        self,
        workflow: WorkflowRecord,
        schedule_id: str,
        body: ScheduleCreate,
        memo: dict[str, Any],
        keyed: Asked | None,
    ) -> None:
        """Create the schedule in Temporal; a keyed repeat finds the first use's."""
        try:
            await temporal_call(
                schedule_id,
                self.client.create_schedule(
                    schedule_id,
                    self._schedule(workflow, schedule_id, body),
                    memo=memo,
                    search_attributes=TypedSearchAttributes(
                        [SearchAttributePair(search_attributes.DEFINITION_ID, workflow.id)]
                    ),
                ),
            )
        except ScheduleAlreadyRunningError:
            if keyed is None:
                raise
            # The key's first use made it (before, or concurrently and won).
            desc, _ = await self._describe(schedule_id)
            await require_first_request(desc, keyed)
            return
        BOUND.made(workflow.id, schedule_id)

    async def _require_room(
        self, workflow: WorkflowRecord, keyed_repeat: str | None, in_flight: int
    ) -> None:
        """409 when the workflow has its most schedules already, counting the creates of it
        in flight here, unless this is a keyed create whose schedule exists (its repeat is
        answered as the first use was)."""
        if self.max_per_workflow is None:
            return
        listed = await self.client.list_schedules(query=schedules_query(workflow.id))
        ids = ({s.id async for s in listed} | BOUND.recently_made(workflow.id)) - (
            BOUND.recently_deleted()
        )
        if keyed_repeat in ids or len(ids) + in_flight < self.max_per_workflow:
            return
        raise Conflict(
            f"Workflow {workflow.id!r} has {len(ids) + in_flight} schedules (with those being "
            "made), the most one may have "
            "(TRELLIS_MAX_SCHEDULES_PER_WORKFLOW); delete one first"
        )

    async def list_all(self, workflow: WorkflowRecord) -> ScheduleList:
        """The workflow's schedules, oldest first (visibility is eventually consistent)."""
        listed = await self.client.list_schedules(query=schedules_query(workflow.id))
        ids = [s.id async for s in listed]
        # Described a few at a time: one after another, a hundred schedules took seconds.
        limit = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

        async def described(schedule_id: str) -> SchedulePublic | None:
            async with limit:
                try:
                    return await self.get(schedule_id)
                except ScheduleRefused as exc:
                    if exc.error.status != RPCStatusCode.NOT_FOUND:
                        raise
                    return None  # deleted, still listed for a moment
                except NotFound:
                    return None  # made outside Trellis under our prefix and attribute

        found = [s for s in await asyncio.gather(*map(described, ids)) if s is not None]
        return ScheduleList(schedules=sorted(found, key=lambda s: (s.created_at, s.id)))

    async def get(self, schedule_id: str) -> SchedulePublic:
        """One schedule, described by Temporal, its firings naming their runs."""
        return await self._with_runs(await _public(*await self._describe(schedule_id)))

    async def _with_runs(self, schedule: SchedulePublic) -> SchedulePublic:
        """`schedule` with each recent firing's `runId`: the run whose record names the
        firing's trigger workflow, among the schedule's newest runs (Temporal keeps its
        last 10 firings; each starts one run at most). None for a firing that started no
        run (a skip), whose run was deleted, or recorded before runs named their firing."""
        if not schedule.recent_actions:
            return schedule
        runs, _total = await self.store.list_runs(
            schedule.workflow_id, schedule_id=schedule.id, per_page=FIRING_RUNS_READ
        )
        by_firing = {run.trigger_workflow_id: run.id for run in runs if run.trigger_workflow_id}
        for action in schedule.recent_actions:
            action.run_id = by_firing.get(action.trigger_workflow_id)
        return schedule

    async def replace(
        self,
        workflow: WorkflowRecord,
        schedule_id: str,
        body: ScheduleCreate,
        if_match: str | None = None,
    ) -> SchedulePublic:
        """Replace timing, input and overlap policy; pause or unpause when that changed.
        412 when `if_match` is given and is not the schedule's ETag, nothing changed."""
        # Before the new argument is stored (schedule_argument.py).
        since = datetime.now(UTC)
        handle = self._handle(schedule_id)
        new = self._schedule(workflow, schedule_id, body)
        # What Temporal would keep for the new spec and policy (and whether the cron fires):
        # "unchanged" means the schedule in Temporal is that now, an edit made in the Web UI
        # included, not only that Trellis's argument is the same.
        expected = await kept_as(self.client, self.task_queue, body, new.policy)
        if holds_to_a_tag(if_match):
            await self._replace_as_read(schedule_id, new, expected, if_match, since)
            return await self.set_paused(schedule_id, body.paused)

        async def updater(current: ScheduleUpdateInput) -> ScheduleUpdate | None:
            trigger = await trellis_trigger(self.client, current.description)
            if trigger is None:
                raise _not_ours(schedule_id)
            if await self._unchanged(current.description.schedule, trigger, new, expected):
                return None  # Temporal records every update, one changing nothing too
            # Keep the paused state here; it changes through pause()/unpause() below.
            new.state = current.description.schedule.state
            return ScheduleUpdate(schedule=new)

        await temporal_call(schedule_id, handle.update(updater))
        updated, _ = await self._describe(schedule_id)
        await release_replaced_argument(self.store, updated, since)
        return await self.set_paused(schedule_id, body.paused)

    async def _replace_as_read(
        self,
        schedule_id: str,
        new: Schedule,
        expected: Schedule,
        if_match: str,
        since: datetime,
    ) -> None:
        """Replace the schedule only while it is as the caller read it (`if_match`): checked
        on a description, and the update sent with that description's conflict token
        (app/services/schedule_update.py). Of writers that read one tag, one is made;
        Temporal drops the others' updates, which the description after each tells."""
        what = f"Schedule {schedule_id}"
        read, trigger = await self._describe(schedule_id)
        require_match(if_match, schedule_tag(await _public(read, trigger)), what)
        if await self._unchanged(read.schedule, trigger, new, expected):
            return  # Temporal records every update, one changing nothing too
        # Keep the paused state here; it changes through set_paused() afterwards.
        new.state = read.schedule.state
        await temporal_call(schedule_id, update_over(self.client, read, new))
        now, trigger = await self._describe(schedule_id)
        # Whichever update it carries (ours, or one that came first), the others' go.
        await release_replaced_argument(self.store, now, since)
        if not await self._unchanged(now.schedule, trigger, new, expected):
            raise stale(if_match, what)

    async def set_paused(self, schedule_id: str, paused: bool) -> SchedulePublic:
        """Pause or unpause (a no-op when already so); returns the schedule. A pause
        records in the skip log each firing waiting behind an open one, which Temporal
        drops while the schedule is paused (app/services/schedule_pause.py)."""
        # Temporal refuses a long note (a 1,000-character `sub` could pause nothing).
        who = self.requested_by or ""
        by = (
            f" by {who[:NOTE_NAME_CHARS]}{'…' if len(who) > NOTE_NAME_CHARS else ''}" if who else ""
        )
        for _ in range(schedule_pause.TRIES):
            read, trigger = await self._describe(schedule_id)
            if read.schedule.state.paused == paused:
                return await self._with_runs(await _public(read, trigger))
            if paused:
                note = f"Paused{by} through the Trellis API"
                note = schedule_pause.with_dropped(note, schedule_pause.waiting(read))
            else:
                note = f"Unpaused{by} through the Trellis API"
            if await schedule_pause.set_state(self.client, read, paused, note) is None:
                continue  # changed since read: Temporal dropped ours
            if paused:
                await schedule_pause.record_dropped(self.store, read, trigger.workflow_id)
            return await self.get(schedule_id)
        raise schedule_pause.too_busy(schedule_id)

    async def trigger(self, schedule_id: str) -> None:
        """Fire the schedule once now (its overlap policy applies); the run it starts
        records the caller, kept here first as Temporal's trigger carries none
        (activities/fired_by.py). In dev mode no one is recorded, as for a run's trigger."""
        await self._describe(schedule_id)
        if self.created_by is not None:
            await self.store.record_schedule_fire(schedule_id, self.created_by, datetime.now(UTC))
        await temporal_call(schedule_id, self._handle(schedule_id).trigger())

    async def delete(self, schedule_id: str) -> None:
        """Delete the schedule and its skips; runs it started are not affected."""
        desc, _ = await self._describe(schedule_id)
        await temporal_call(schedule_id, self._handle(schedule_id).delete())
        BOUND.deleted(schedule_id)
        # A keyed create after this makes a new schedule, not one under this id.
        await mark_deleted(self.store, desc, datetime.now(UTC).isoformat().replace("+00:00", "Z"))
        # After the schedule: a firing before the delete may still log a skip.
        await forget_schedule(self.store, schedule_id)

    async def skips(self, schedule_id: str, after_id: int, limit: int) -> ScheduleSkipList:
        """Firings that started no run, oldest first, after the given skip id (404 for a
        schedule Temporal does not have, as every other path of a schedule)."""
        await self._describe(schedule_id)
        events = await self.store.list_events(skip_log_key(schedule_id), after_id, limit)
        return ScheduleSkipList(skips=[ScheduleSkip.model_validate(e) for e in events])

    def _handle(self, schedule_id: str) -> ScheduleHandle:
        # Which workflow a schedule id may belong to is checked by the route's dependency.
        return self.client.get_schedule_handle(schedule_id)

    def _schedule(
        self, workflow: WorkflowRecord, schedule_id: str, body: ScheduleCreate
    ) -> Schedule:
        trigger = ScheduleTriggerInput(
            schedule_id=schedule_id,
            workflow_id=workflow.id,
            initial_input=body.initial_input,
            cron=body.cron,
            interval_seconds=body.interval_seconds,
            time_zone=body.time_zone,
            default_gate_timeout_seconds=self.default_gate_timeout_seconds,
        )
        return Schedule(
            action=ScheduleActionStartWorkflow(
                SCHEDULE_WORKFLOW_TYPE,
                trigger,
                id=trigger_workflow_id(schedule_id),
                task_queue=self.task_queue,
                static_summary=f"Schedule of {workflow.name!r}",
            ),
            spec=schedule_spec(body),
            policy=SchedulePolicy(overlap=OVERLAP[body.overlap_policy]),
            state=ScheduleState(paused=body.paused),
        )

    async def _unchanged(
        self, current: Schedule, trigger: ScheduleTriggerInput, new: Schedule, expected: Schedule
    ) -> bool:
        """Whether `new` asks for what `current` (made with `trigger`) already is: the timing,
        input and settings as given are the trigger's argument, and the spec and policy in
        Temporal are what `new`'s become there (`expected`), whoever changed them last."""
        was, will = current.action, new.action
        if not isinstance(was, ScheduleActionStartWorkflow):
            return False
        if not isinstance(will, ScheduleActionStartWorkflow):
            return False
        summary = was.static_summary
        if isinstance(summary, Payload):  # a described schedule's summary is still encoded
            [summary] = await self.client.data_converter.decode([summary], [str])
        return (
            list(will.args) == [trigger]
            and (current.spec, current.policy) == (expected.spec, expected.policy)
            and (was.workflow, was.id, was.task_queue) == (will.workflow, will.id, will.task_queue)
            and summary == will.static_summary
        )

    async def _describe(self, schedule_id: str) -> tuple[ScheduleDescription, ScheduleTriggerInput]:
        """The schedule and its trigger's argument; 404 for one Trellis did not make."""
        desc = await temporal_call(schedule_id, self._handle(schedule_id).describe())
        trigger = await trellis_trigger(self.client, desc)
        if trigger is None:
            raise _not_ours(schedule_id)
        return desc, trigger


async def trellis_trigger(client: Client, desc: ScheduleDescription) -> ScheduleTriggerInput | None:
    """The argument of a schedule Trellis made; None for any other schedule (one made in
    Temporal under our id prefix, or with our search attribute, is not ours to show,
    change or delete)."""
    action = desc.schedule.action
    if (
        not isinstance(action, ScheduleActionStartWorkflow)
        or action.workflow != SCHEDULE_WORKFLOW_TYPE
        or len(action.args) != 1
    ):
        return None
    try:
        [trigger] = await client.data_converter.decode(list(action.args), [ScheduleTriggerInput])
    except (ValueError, RuntimeError):  # not JSON, or not a trigger's argument
        return None
    if not isinstance(trigger, ScheduleTriggerInput) or trigger.schedule_id != desc.id:
        return None
    if not desc.id.startswith(schedule_prefix(trigger.workflow_id)):
        return None
    return trigger


def _not_ours(schedule_id: str) -> NotFound:
    # The message of a schedule Temporal does not have (app/errors.py): it is not ours.
    return NotFound(f"Schedule not found: {schedule_id}")


async def _public(desc: ScheduleDescription, trigger: ScheduleTriggerInput) -> SchedulePublic:
    overlap: OverlapPolicy = OVERLAP_NAMES[desc.schedule.policy.overlap]
    paused = desc.schedule.state.paused
    return SchedulePublic(
        id=desc.id,
        workflow_id=trigger.workflow_id,
        cron=trigger.cron,
        interval_seconds=trigger.interval_seconds,
        time_zone=trigger.time_zone,
        initial_input=trigger.initial_input,
        overlap_policy=overlap,
        paused=paused,
        note=desc.schedule.state.note,
        num_actions=desc.info.num_actions,
        num_actions_skipped_overlap=desc.info.num_actions_skipped_overlap,
        num_actions_missed_catchup_window=desc.info.num_actions_missed_catchup_window,
        # Temporal keeps a paused schedule's last computed times, which then pass: a
        # paused schedule has no next firing.
        next_action_times=[] if paused else list(desc.info.next_action_times[:5]),
        recent_actions=[
            ScheduleActionPublic(
                scheduled_at=a.scheduled_at,
                started_at=a.started_at,
                trigger_workflow_id=getattr(a.action, "workflow_id", ""),
            )
            for a in desc.info.recent_actions
        ],
        created_at=desc.info.created_at,
        updated_at=desc.info.last_updated_at,
        # Schedules made before the creator was recorded have none.
        created_by=await desc.memo_value(CREATOR, default=None),
    )
