"""Idempotent writes of the read model (run and node-run records, run events).

Written by the outbox's local activity, or by a step's activity before its call (the
writes the outbox handed it); revisions make retries and out-of-order writes harmless.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.metrics import COUNTED_EVENTS, GATES_CLOSED_BY, RUN_ENDINGS, RunMetrics
from activities.run_log import run_fields
from activities.store.base import Store
from activities.store.records import RunRecord
from temporal_workflows.contracts import (
    NOW,
    RECORD_BATCH,
    ProjectionBatch,
    RunProjection,
)
from temporal_workflows.read_model import TERMINAL_RUN_STATUSES

log = logging.getLogger("trellis.runs")


class ProjectionActivities:
    def __init__(self, store: Store, metrics: RunMetrics | None = None) -> None:
        self._store = store
        self._metrics = metrics or RunMetrics()

    @activity.defn(name=RECORD_BATCH)
    async def record_batch(self, batch: ProjectionBatch) -> None:
        """Apply a batch of writes in order (SQLite commits them in one transaction)."""
        await write_batch(self._store, self._metrics, batch, activity.info().workflow_run_id)

    def all(self) -> list[Any]:
        return [self.record_batch]


async def write_batch(
    store: Store, metrics: RunMetrics, batch: ProjectionBatch, execution: str | None
) -> None:
    """Apply a batch of the workflow's writes in order (the outbox's, or a step's
    `writes_before`); counted events are counted once however often the batch runs.

    `execution` is the Temporal run id of the workflow execution that made the batch:
    with the batch's sequence numbers it keys every event, which the store logs once.
    Without either (an activity started outside a workflow, a batch made before keys), the
    events are unkeyed.
    """
    counted = [p for p in batch.runs if p.event and p.event.get("type") in COUNTED_EVENTS]
    end = next((p for p in counted if p.event and p.event.get("type") in RUN_ENDINGS), None)
    # A workflow task that wrote the run's end and then was refused (a cancel came while
    # it ran) runs again and writes another end over it (`Store.update_run`'s `ending`):
    # the run's end, and the gates it closed, were counted when the first one landed.
    before = await store.get_run(end.run_id) if end else None
    # An end an older execution wrote (a reset goes on in a new one) is not this one's.
    ended_before = (
        before is not None
        and before.status in TERMINAL_RUN_STATUSES
        and before.execution in (None, execution)
    )
    ending = end if end and end.event and end.event.get("type") in GATES_CLOSED_BY else None
    left_open = _gates_left_open(before, batch, ending) if ending else []
    keys = iter(_event_keys(batch, execution))
    runs, node_runs = iter(batch.runs), iter(batch.node_runs)
    writes = []
    for kind in batch.order:
        if kind == "r":
            p = next(runs)
            (key,) = next(keys) or [None]
            # Every run write of the workflow has a rev of its own (the recorder counts
            # them, across continue-as-new), so one already stored is a repeat: the batch
            # of a workflow task that ran again after its first attempt had written it (a
            # worker or Temporal lost the task's completion). Applied only over an older
            # rev, it logs its event once, not a second `awaiting_approval` or `run_started`.
            writes.append(
                store.update_run(
                    p.run_id,
                    p.rev,
                    _stamped(p.changes, execution),
                    p.event,
                    newer_only=True,
                    event_key=key,
                    ending=bool(p.event and p.event.get("type") in RUN_ENDINGS),
                )
            )
        else:
            # Node runs share revs by band (a repeat at an equal rev is legitimate), so a
            # node write of a task that ran again is applied again: its events' keys are
            # what keep them logged once.
            n = next(node_runs)
            writes.append(write_node_run(store, n.record, n.events, next(keys), execution))
    # Started in order, so a group-committing store queues them in order.
    landed = await asyncio.gather(*writes)
    now = datetime.now(UTC)
    metrics.batch_landed(_oldest_write(batch), now)
    if not counted:
        return
    # A batch runs again when its completion was lost (a worker crash, a failed workflow
    # task): a run write lands only over an older rev (newer_only), so one that lands is
    # counted, and what an earlier attempt applied does not land again.
    run_landed = iter(ok for kind, ok in zip(batch.order, landed, strict=True) if kind == "r")
    for p, ok in zip(batch.runs, run_landed, strict=True):
        if ok and p.event and p.event.get("type") in COUNTED_EVENTS:
            _log_end(p)
            if p is end and ended_before:
                continue
            metrics.run_written(p.workflow_id, p.event, p.changes)
            if p is ending:
                resolution = GATES_CLOSED_BY[str(p.event.get("type"))]
                ended_at = p.changes.get("finished_at")
                metrics.gates_closed(p.workflow_id, left_open, ended_at, resolution)


def _log_end(p: RunProjection) -> None:
    """A line for a run's end, logged once with it: a run failed by the workflow itself
    (a CEL error, a rejection's spent retries) left no line anywhere."""
    status = RUN_ENDINGS.get(str(p.event.get("type"))) if p.event else None
    if status is None:
        return
    why = p.changes.get("error_summary")
    log.log(
        logging.WARNING if status == "failed" else logging.INFO,
        "run %s%s",
        status,
        f": {why}" if why else "",
        extra=run_fields(p.run_id, p.workflow_id),
    )


def _gates_left_open(
    stored: RunRecord | None, batch: ProjectionBatch, ending: RunProjection
) -> list[dict[str, Any]]:
    """The gates still waiting when the run ended: the run's end clears them from its
    pending list without a decision, so they are found in what was written before it (the
    stored run, then this batch's earlier writes) and not among its decided ones."""
    waiting = {_gate_key(g): g for g in (stored.pending_requirements if stored else [])}
    for p in batch.runs:
        if p is ending:
            break
        waiting.update({_gate_key(g): g for g in p.changes.get("pending_requirements") or []})
    decided = {_gate_key(g) for g in ending.changes.get("resolved_requirements") or []}
    return [g for key, g in waiting.items() if key not in decided]


def _gate_key(gate: dict[str, Any]) -> tuple[str, str]:
    # A gate re-opened after a rejection has the same step id and a new opening time.
    return str(gate.get("stepId")), str(gate.get("createdAt"))


async def write_node_run(
    store: Store,
    fields: dict[str, Any],
    events: list[dict[str, Any]],
    keys: list[str | None] | None = None,
    execution: str | None = None,
) -> bool:
    """Merge `fields` into the stored node run (or create it); append the events if applied
    (each under its key, when given). `execution` names the workflow execution writing."""
    return await store.merge_node_run(_stamped(fields, execution), events, keys or ())


def event_key(execution: str, seq: int | str, event: dict[str, Any]) -> str:
    """`<Temporal run id>:<write's sequence number>:<hash of the event but its timestamp>`.

    The same write of a task that runs again has the same key: its sequence number and
    content are deterministic, its timestamp (the new task's workflow time) is not, so it
    is left out. A task that runs again with new input (an update arrived meanwhile) may
    queue another write at that number: other content, another key, logged. Two equal
    events one after the other (two pauses by one caller) differ by number, both logged.
    """
    content = {k: v for k, v in event.items() if k != "timestamp" and v != NOW}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{execution}:{seq}:{digest}"


def _event_keys(batch: ProjectionBatch, execution: str | None) -> list[list[str | None]]:
    """The keys of each write's events, in `order`; none when the batch is unkeyed (made
    before keys, or written outside a workflow's activity).

    A write's events are keyed by its sequence number, then `.i` for the i-th past the
    first (a write may log two events, which must not take each other for repeats).
    """
    runs, node_runs = iter(batch.runs), iter(batch.node_runs)
    keys: list[list[str | None]] = []
    for index, kind in enumerate(batch.order):
        if kind == "r":
            event = next(runs).event
            events = [] if event is None else [event]
        else:
            events = next(node_runs).events
        if batch.first_seq is None or execution is None:
            keys.append([None] * len(events))
            continue
        seq = batch.first_seq + index
        keys.append(
            [event_key(execution, seq if i == 0 else f"{seq}.{i}", e) for i, e in enumerate(events)]
        )
    return keys


def _stamped(fields: dict[str, Any], execution: str | None = None) -> dict[str, Any]:
    """Replace NOW placeholders with this activity's clock (see the interpreter), and name
    the workflow execution writing, when known: the latest one speaks for the run
    (activities/store/executions.py)."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    stamped = {k: (now if v == NOW else v) for k, v in fields.items()}
    if execution is not None:
        stamped["execution"] = execution
    return stamped


def _oldest_write(batch: ProjectionBatch) -> str | None:
    """When the batch's first write was made (workflow time): the first event's timestamp."""
    runs, node_runs = iter(batch.runs), iter(batch.node_runs)
    for kind in batch.order:
        if kind == "r":
            event = next(runs).event
            if event and event.get("timestamp"):
                return str(event["timestamp"])
        else:
            for event in next(node_runs).events:
                if event.get("timestamp"):
                    return str(event["timestamp"])
    return None
