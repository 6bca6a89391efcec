"""Starting a run: the one path every trigger takes (API, lineage, schedules).

The path: the workflow must be enabled; the run record is written first (so every GET
sees the run at once, and the workflow's own writes find it); then its `TrellisRun`
workflow is started under the run id; a start Temporal refuses marks the run failed.

Starting is idempotent by run id, end to end. Writing the record again returns the
stored one; the workflow is started only while that record is still `pending` (its
workflow never wrote), with `USE_EXISTING` (a running workflow is attached to) and
`REJECT_DUPLICATE` (a closed one is never run a second time). So calling `start` again
for a record whose workflow never started (still `pending`) starts it, and for any other
record does nothing but return it. Three callers rely on that: a request repeated with
the same `Idempotency-Key` (a trigger, retry, node rerun or replay), a schedule's next
attempt, and the reconciler. A record written anew under an id Temporal already closed a
workflow of (its run deleted from the store by the run retention, kept by Temporal's)
can never start: it is deleted again and `RunIdTaken` raised. A running workflow under
the id is the record's own (the reconciler started it meanwhile): the record is kept.

Before asking Temporal, a starter claims the run (`activities/start_claim.py`): a run
cancelled before its start is never started, whoever repeats the start.

A run marked failed because Temporal refused its start (the caller got a 503) reads
failed, but the mark is written at `START_FAILED_REV`, the claim's rev: the
workflow's first write outranks it (a start reported as failed may have been accepted),
and `start(..., restart_refused=True)` (a repeated trigger: the 503 asked for one)
reopens and starts it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError

from activities.run_log import run_fields
from activities.start_claim import cancel_if_cancelled, claim_start
from activities.start_conflict import kept_workflow_is_running
from activities.store.base import Store
from activities.store.records import ResolvedDependency, RunRecord, WorkflowRecord, utcnow
from temporal_workflows import search_attributes
from temporal_workflows.cel_budget import EVALUATION_STEPS, MAX_TASK_STEPS
from temporal_workflows.contracts import WORKFLOW_TYPE, CachedOutput, Identity, RunInput
from temporal_workflows.json_data import (
    DEFAULT_MAX_OUTPUT_BYTES,
    MAX_DATA_VALUES,
    MAX_OUTPUT_DEPTH,
)
from temporal_workflows.read_model import RECORDED_REV, START_FAILED_REV
from temporal_workflows.step_inputs import IN_FLIGHT_BYTES

log = logging.getLogger("trellis.runs")
DISABLED_MESSAGE = "Workflow is disabled. Please enable the workflow before triggering a run."


class WorkflowDisabled(Exception):
    """The workflow is disabled: no path starts a run of it (contract 6)."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(DISABLED_MESSAGE)
        self.workflow_id = workflow_id


class RunIdTaken(Exception):
    """Temporal keeps a closed workflow under the run id, but the store has no run of it:
    the run ended and was deleted (run retention), while Temporal's namespace retention
    keeps it longer. A run of that id can never start again; the record written for one
    was taken back."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Temporal already has a closed workflow of run {run_id}")
        self.run_id = run_id


class RunStartFailed(Exception):
    """Temporal did not accept the run's workflow."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"Temporal did not accept the run: {reason}")
        self.run_id = run_id
        self.reason = reason


def require_enabled(workflow: WorkflowRecord) -> None:
    """Raise WorkflowDisabled unless the workflow is enabled."""
    if not workflow.enabled:
        raise WorkflowDisabled(workflow.id)


def new_run_id(workflow_id: str, idempotency_key: str | None = None) -> str:
    """A fresh run id, or one derived from the idempotency key (so repeats collide)."""
    if idempotency_key is None:
        return f"run-{uuid.uuid4()}"
    return f"run-{uuid.uuid5(uuid.NAMESPACE_URL, f'trellis:{workflow_id}:{idempotency_key}')}"


def new_run_record(
    workflow: WorkflowRecord,
    trigger_source: str,
    initial_input: dict[str, Any],
    *,
    run_id: str | None = None,
    pinned_to: RunRecord | None = None,
    parent_run_id: str | None = None,
    resolved_dependencies: list[ResolvedDependency] | None = None,
    idempotency_key: str | None = None,
    triggered_by: Identity | None = None,
    schedule_id: str | None = None,
    trigger_workflow_id: str | None = None,
) -> RunRecord:
    """A pending run of the workflow's live definition, or of the one `pinned_to` ran on;
    its id is derived from `idempotency_key` when one is given (see `new_run_id`)."""
    version, snapshot = (
        (pinned_to.workflow_version, pinned_to.definition_snapshot)
        if pinned_to is not None
        else (workflow.version, workflow.spec())
    )
    return RunRecord(
        id=run_id or new_run_id(workflow.id, idempotency_key),
        workflow_definition_id=workflow.id,
        workflow_version=version,
        trigger_source=trigger_source,
        initial_input=initial_input,
        definition_snapshot=snapshot,
        parent_run_id=parent_run_id,
        resolved_dependencies=resolved_dependencies or [],
        idempotency_key=idempotency_key,
        triggered_by=triggered_by,
        schedule_id=schedule_id,
        trigger_workflow_id=trigger_workflow_id,
        rev=RECORDED_REV,
    )


@dataclass
class RunStarter:
    """Starts runs on one task queue with the defaults of whoever built it (API or schedule)."""

    store: Store
    client: Client
    task_queue: str
    default_gate_timeout_seconds: float | None = None
    # TRELLIS_MAX_PAYLOAD_BYTES, for the steps the workflow evaluates itself.
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES

    async def start(
        self,
        workflow: WorkflowRecord,
        record: RunRecord,
        *,
        cached: dict[str, CachedOutput] | None = None,
        stop_after_node_id: str | None = None,
        mark_failed: bool = True,
        restart_refused: bool = False,
    ) -> RunRecord:
        """Record the run and start its workflow; returns the stored record.

        A refused start raises RunStartFailed; with `mark_failed` the run is marked
        failed first, without it the record stays pending for a retry to start. With
        `restart_refused`, a run an earlier refused start marked failed is started too.
        A record this call wrote whose id Temporal already closed a workflow of (a run
        deleted from the store) is deleted again, and RunIdTaken raised.
        """
        require_enabled(workflow)
        if record.rev == RECORDED_REV and record.status == "pending":
            record.stop_after_node_id = stop_after_node_id
            record.default_gate_timeout_seconds = self.default_gate_timeout_seconds
        stored = await self.store.insert_run(record)
        inserted = stored is record  # not one recorded earlier (Store.insert_run)
        if restart_refused and start_was_refused(stored):
            stored = await self._reopen(stored)
        if stored.status != "pending":
            return stored  # its workflow started already (or a start was given up on)
        stored = await claim_start(self.store, stored)
        if stored.status != "pending":
            return stored  # cancelled before it started, or its workflow wrote meanwhile
        if cached is None or stored.resolved_dependencies != record.resolved_dependencies:
            # `cached` belongs to `record`: a record stored first by another request (a
            # concurrent use of its Idempotency-Key) starts with the outputs it names.
            cached = await cached_outputs_of(self.store, stored)
        try:
            await start_run_workflow(
                self.client,
                stored,
                task_queue=self.task_queue,
                cached=cached,
                stop_after_node_id=stored.stop_after_node_id,
                default_gate_timeout_seconds=stored.default_gate_timeout_seconds,
                max_output_bytes=self.max_output_bytes,
            )
        except WorkflowAlreadyStartedError:
            if inserted and await self._is_deleted_runs(stored.id):
                # No run of this id was in the store: the workflow Temporal keeps is a
                # deleted run's. The record just written would stay pending for nothing.
                raise RunIdTaken(stored.id) from None
            # This record's workflow (another starter's, or it ran and closed before its
            # first write landed; not again), or Temporal could not say: a start in flight.
            return stored
        except Exception as exc:
            log.warning(
                "run start refused by Temporal: %s", exc, extra=run_fields(stored.id, workflow.id)
            )
            if mark_failed:
                await self._mark_start_failed(stored.id, str(exc))
            raise RunStartFailed(stored.id, str(exc)) from exc
        # A cancel may have ended the claimed run while Temporal was starting it.
        await cancel_if_cancelled(self.store, self.client, stored.id)
        log.info(
            "run started (%s, version %s)",
            stored.trigger_source,
            stored.workflow_version,
            extra=run_fields(stored.id, workflow.id),
        )
        return stored

    async def _is_deleted_runs(self, run_id: str) -> bool:
        """Whether the closed workflow under the id of a record this start wrote is a
        deleted run's; if so, the record is deleted again (`activities/start_conflict.py`)."""
        running = await kept_workflow_is_running(self.client, run_id)
        if running is None or running:
            return False  # this record's live run (or unknown): never delete its record
        return await self.store.delete_unstarted_run(run_id)

    async def _reopen(self, run: RunRecord) -> RunRecord:
        """Put a run whose start was refused back to `pending` (unless its workflow wrote)."""
        await self.store.update_run(
            run.id,
            START_FAILED_REV,
            {"status": "pending", "finished_at": None, "error_summary": None},
        )
        return await self.store.get_run(run.id) or run

    async def _mark_start_failed(self, run_id: str, reason: str) -> None:
        await self.store.update_run(
            run_id,
            START_FAILED_REV,
            {
                "status": "failed",
                "finished_at": utcnow().isoformat(),
                "error_summary": f"Run could not be started: {reason}",
            },
        )


def start_was_refused(run: RunRecord) -> bool:
    """A run marked failed by a refused start, whose workflow never wrote since."""
    return run.status == "failed" and run.rev == START_FAILED_REV


async def cached_outputs_of(store: Store, run: RunRecord) -> dict[str, CachedOutput]:
    """The parent's outputs a run reuses, read back from its resolved dependencies."""
    cached: dict[str, CachedOutput] = {}
    for dep in run.resolved_dependencies:
        if dep.resolution != "reuse_previous_output" or dep.source_node_run_id is None:
            continue
        source = await store.get_node_run(dep.source_node_run_id)
        if source is not None:
            cached[dep.node_id] = CachedOutput(
                source_node_run_id=source.id, output=source.output_snapshot
            )
    return cached


async def start_run_workflow(
    client: Client,
    record: RunRecord,
    *,
    task_queue: str,
    cached: dict[str, CachedOutput] | None = None,
    stop_after_node_id: str | None = None,
    default_gate_timeout_seconds: float | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    history_event_budget: int | None = None,
    continue_as_new_after_events: int | None = None,
    step_input_bytes: int = IN_FLIGHT_BYTES,
) -> None:
    """Start `TrellisRun` for the record (attaching to it when it is already running)."""
    run_input = RunInput(
        run_id=record.id,
        workflow_id=record.workflow_definition_id,
        workflow_version=record.workflow_version,
        definition=record.definition_snapshot,
        initial_input=record.initial_input,
        trigger_source=record.trigger_source,
        parent_run_id=record.parent_run_id,
        cached_outputs=cached or {},
        stop_after_node_id=stop_after_node_id,
        default_gate_timeout_seconds=default_gate_timeout_seconds,
        triggered_by=record.triggered_by,
        expression_task_steps=MAX_TASK_STEPS,
        expression_steps=EVALUATION_STEPS,
        max_output_depth=MAX_OUTPUT_DEPTH,
        max_output_bytes=max_output_bytes,
        max_output_values=MAX_DATA_VALUES,
        steps_write_queued=True,
        steps_write_node_runs=True,
        results_charged=True,
        variables_charged=True,
        status_shown_per_task=True,
        inline_steps_yield=True,
        rejected_gates_close_node_runs=True,
        templates_keep_unicode=True,
        deep_placement=True,
        container_ends_complete=True,
        inline_events_attempt=True,
        step_input_bytes=step_input_bytes,
        payload_offload_bytes=_offload_bytes(client),
        branches_pooled=True,
        **({} if history_event_budget is None else {"history_event_budget": history_event_budget}),
        **(
            {}
            if continue_as_new_after_events is None
            else {"continue_as_new_after_events": continue_as_new_after_events}
        ),
    )
    await client.start_workflow(
        WORKFLOW_TYPE,
        run_input,
        id=record.id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        search_attributes=run_search_attributes(record),
        static_summary=record.definition_snapshot.name,
        static_details=run_details(record),
    )


def run_search_attributes(record: RunRecord) -> TypedSearchAttributes:
    pairs = [
        SearchAttributePair(search_attributes.DEFINITION_ID, record.workflow_definition_id),
        SearchAttributePair(search_attributes.RUN_STATUS, "pending"),
        SearchAttributePair(search_attributes.TRIGGER_SOURCE, record.trigger_source),
    ]
    if record.parent_run_id:
        pairs.append(SearchAttributePair(search_attributes.PARENT_RUN_ID, record.parent_run_id))
    return TypedSearchAttributes(pairs)


def run_details(record: RunRecord) -> str:
    return (
        f"Workflow {record.definition_snapshot.name!r} (definition "
        f"{record.workflow_definition_id}, version {record.workflow_version}), "
        f"triggered by {record.trigger_source}"
    )


def _offload_bytes(client: Client) -> int | None:
    """The size from which the client's data converter (the worker's too: one setting)
    keeps a payload in the store; None when it keeps none there."""
    storage = client.data_converter.external_storage
    return None if storage is None else storage.payload_size_threshold
