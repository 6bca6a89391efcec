"""A workflow task that runs again after its read-model batch landed logs each event once.

Seen under load with the Temporal dev server SIGKILLed: a gate's workflow task wrote its
batch (the local activity ran), the server died before the task's completion was kept,
the task timed out and ran again from history — and the run's log had `awaiting_approval`
twice, so a client following the stream was told twice that a person was needed. The
second attempt writes the same revs with its own timestamps (the task's new start time).

Run writes are applied once per rev; node runs share revs by band, so their events are
kept single by their keys (the execution, the write's sequence number, the content).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from temporalio import workflow
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    StartLocalActivityInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.metrics import RunMetrics
from activities.projections import ProjectionActivities
from activities.store.sqlite import SqliteStore
from app import worker as worker_module
from temporal_workflows.contracts import (
    RECORD_BATCH,
    NodeRunProjection,
    ProjectionBatch,
    RunProjection,
)
from temporal_workflows.read_model import OPEN_REV, node_event, node_record, run_event
from tests.builders import echo
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.store.builders import new_id, run
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.platform import running_platform

EXECUTION = "0b7c1e4e-temporal-run-id"


def in_execution(temporal_run_id: str = EXECUTION) -> ActivityEnvironment:
    """The context Temporal gives the batch's local activity in one workflow execution."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_run_id=temporal_run_id)
    return env


def _task_batch(run_id: str, workflow_id: str, timestamp: str) -> ProjectionBatch:
    """What one workflow task queues: the run starts, then holds at a gate."""
    writes = [
        RunProjection(
            run_id=run_id,
            workflow_id=workflow_id,
            rev=rev,
            changes={"status": status},
            event=run_event(kind, run_id=run_id, status=status, timestamp=timestamp),
        )
        for rev, kind, status in (
            (1, "run_started", "running"),
            (2, "awaiting_approval", "awaiting_approval"),
        )
    ]
    return ProjectionBatch(runs=writes, order="rr", first_seq=0)


def _gate_write(run_id: str, workflow_id: str, timestamp: str) -> NodeRunProjection:
    """A step's node run held at its gate: rev OPEN_REV, which repeats legitimately."""
    record = node_record(
        run_id=run_id,
        node_run_id=f"{run_id}.review.1",
        node_id="review",
        node_name="Review",
        node_type="step",
        status="awaiting_approval",
        rev=OPEN_REV,
    )
    event = node_event(
        "node_awaiting_approval",
        run_id=run_id,
        node_run_id=record["id"],
        node_id="review",
        node_name="Review",
        status="awaiting_approval",
        timestamp=timestamp,
    )
    return NodeRunProjection(run_id=run_id, workflow_id=workflow_id, record=record, events=[event])


def _gate_batch(run_id: str, workflow_id: str, timestamp: str) -> ProjectionBatch:
    """What a gate's workflow task queues (its writes 4 and 5): the node run, the run."""
    status = "awaiting_approval"
    return ProjectionBatch(
        node_runs=[_gate_write(run_id, workflow_id, timestamp)],
        runs=[
            RunProjection(
                run_id=run_id,
                workflow_id=workflow_id,
                rev=3,
                changes={"status": status},
                event=run_event(status, run_id=run_id, status=status, timestamp=timestamp),
            )
        ],
        order="nr",
        first_seq=4,
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "trellis.db")
    await opened.connect()
    try:
        yield opened
    finally:
        await opened.close()


async def _log(store: SqliteStore, run_id: str) -> list[tuple[str, str]]:
    return [(e["type"], e["timestamp"]) for e in await store.list_events(run_id, 0, 100)]


async def test_a_workflow_task_run_again_logs_its_run_events_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "trellis.db")
    await store.connect()
    try:
        workflow_id = new_id()
        record = await store.insert_run(run(workflow_id))
        projections = ProjectionActivities(store, RunMetrics(CollectorRegistry()))

        env = in_execution()
        await env.run(projections.record_batch, _task_batch(record.id, workflow_id, "10:00:00Z"))
        # The same task again, from history, seconds later.
        await env.run(projections.record_batch, _task_batch(record.id, workflow_id, "10:00:13Z"))

        events = await store.list_events(record.id, 0, 10)
        assert [(e["type"], e["timestamp"]) for e in events] == [
            ("run_started", "10:00:00Z"),
            ("awaiting_approval", "10:00:00Z"),
        ]
        stored = await store.get_run(record.id)
        assert stored is not None and stored.status == "awaiting_approval"
    finally:
        await store.close()


async def _projections(store: SqliteStore) -> tuple[ProjectionActivities, str, str]:
    workflow_id = new_id()
    record = await store.insert_run(run(workflow_id, rev=2))
    return ProjectionActivities(store, RunMetrics(CollectorRegistry())), record.id, workflow_id


async def test_a_workflow_task_run_again_logs_its_node_events_once(store: SqliteStore) -> None:
    projections, run_id, workflow_id = await _projections(store)
    env = in_execution()
    await env.run(projections.record_batch, _gate_batch(run_id, workflow_id, "10:00:00Z"))
    # The task again: the node run's rev is the same (OPEN_REV), so the write applies again.
    await env.run(projections.record_batch, _gate_batch(run_id, workflow_id, "10:00:13Z"))

    assert await _log(store, run_id) == [
        ("node_awaiting_approval", "10:00:00Z"),
        ("awaiting_approval", "10:00:00Z"),
    ]
    node_run = await store.get_node_run(f"{run_id}.review.1")
    assert node_run is not None and node_run.status == "awaiting_approval"


async def test_a_task_run_again_with_other_writes_logs_them(store: SqliteStore) -> None:
    # The task ran again with new input (an update arrived meanwhile): another write at the
    # same sequence number is not a repeat.
    projections, run_id, workflow_id = await _projections(store)
    env = in_execution()
    await env.run(projections.record_batch, _gate_batch(run_id, workflow_id, "10:00:00Z"))
    other = _gate_batch(run_id, workflow_id, "10:00:13Z")
    other.node_runs[0].events[0]["type"] = "node_cancelled"
    other.node_runs[0].record["rev"] = OPEN_REV + 1
    await env.run(projections.record_batch, other)

    assert [kind for kind, _ in await _log(store, run_id)] == [
        "node_awaiting_approval",
        "awaiting_approval",
        "node_cancelled",
    ]


async def test_two_equal_events_one_after_the_other_are_both_logged(store: SqliteStore) -> None:
    # The same node-run write queued twice (writes 4 and 5), equal but for nothing: both
    # are the run's, not a repeat of one task.
    projections, run_id, workflow_id = await _projections(store)
    write = _gate_write(run_id, workflow_id, "10:00:00Z")
    batch = ProjectionBatch(node_runs=[write, write], order="nn", first_seq=4)
    await in_execution().run(projections.record_batch, batch)

    assert await _log(store, run_id) == [("node_awaiting_approval", "10:00:00Z")] * 2


async def test_the_same_writes_of_a_continued_execution_are_logged(store: SqliteStore) -> None:
    # After continue-as-new the outbox counts from 0 again, under another Temporal run id;
    # a newer execution's run write is taken whatever its rev (a reset's starts again from
    # the bottom: activities/store/executions.py), so its event is logged too.
    projections, run_id, workflow_id = await _projections(store)
    batch = _gate_batch(run_id, workflow_id, "10:00:00Z")
    await in_execution("first-execution").run(projections.record_batch, batch)
    await in_execution("next-execution").run(projections.record_batch, batch)

    assert [kind for kind, _ in await _log(store, run_id)] == [
        "node_awaiting_approval",
        "awaiting_approval",
        "node_awaiting_approval",
        "awaiting_approval",
    ]


class _LoseGateTaskOnce(Interceptor):
    """Fails a gate's workflow task once, right after its local activity wrote the batch:
    what a worker killed before the task's completion reached Temporal leaves behind."""

    def __init__(self) -> None:
        self.lost: set[str] = set()  # workflow ids whose gate task was failed

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        lost = self.lost

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                self.losing = False
                super().init(Outbound(outbound, self))

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                # Raised from the run itself (an error in another of its tasks would wait
                # for someone to await it), in the activation the batch's result arrived.
                run = asyncio.ensure_future(super().execute_workflow(input))
                await workflow.wait_condition(lambda: run.done() or self.losing)
                if self.losing:
                    raise RuntimeError("the workflow task's completion was lost")
                return await run

        class Outbound(WorkflowOutboundInterceptor):
            def __init__(self, next: WorkflowOutboundInterceptor, inbound: Inbound) -> None:
                super().__init__(next)
                self._inbound = inbound

            def start_local_activity(
                self, input: StartLocalActivityInput
            ) -> workflow.ActivityHandle[Any]:
                handle = super().start_local_activity(input)
                workflow_id = workflow.info().workflow_id
                if (
                    input.activity == RECORD_BATCH
                    and workflow_id not in lost
                    and _gate(input.args[0])
                ):
                    lost.add(workflow_id)
                    handle.add_done_callback(lambda _: setattr(self._inbound, "losing", True))
                return handle

        return Inbound


def _gate(batch: Any) -> bool:
    return isinstance(batch, ProjectionBatch) and any(
        e.get("type") == "node_awaiting_approval" for n in batch.node_runs for e in n.events
    )


async def test_a_gate_task_temporal_runs_again_logs_each_event_once(
    temporal_env: WorkflowEnvironment,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real run on the dev server whose gate task fails once after its batch landed: the
    # task runs again from history and writes the batch again, node events included.
    interceptor = _LoseGateTaskOnce()

    def with_interceptor(*args: Any, **kwargs: Any) -> Worker:
        return Worker(*args, **kwargs, interceptors=[interceptor])

    monkeypatch.setattr(worker_module, "Worker", with_interceptor)
    catalog = load_catalog(None)
    await catalog.start()
    registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED)
    try:
        async with running_platform(temporal_env.client, tmp_path, registry) as p:
            wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
            await wait_for_gate(p, wf, run_id, "send")
            await p.wait(wf, run_id, {"awaiting_approval"})
            assert run_id in interceptor.lost
            decided = await approve(p, wf, run_id, stepId="send", resolution="confirm")
            assert decided.status_code == 200, decided.text
            assert (await p.wait(wf, run_id))["status"] == "completed"
            events = await p.store.list_events(run_id, 0, 100)
    finally:
        await registry.close()
        await catalog.close()

    kinds = [e["type"] for e in events]
    assert kinds.count("node_awaiting_approval") == 1, kinds
    assert kinds.count("awaiting_approval") == 1, kinds
    assert kinds[-1] == "run_completed"
