"""A workflow task that runs again after its read-model batch landed logs each event once.

Seen under load with the Temporal dev server SIGKILLed: a gate's workflow task wrote its
batch (the local activity ran), the server died before the task's completion was kept,
the task timed out and ran again from history — and the run's log had `awaiting_approval`
twice, so a client following the stream was told twice that a person was needed. The
second attempt writes the same revs with its own timestamps (the task's new start time).
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from activities.metrics import RunMetrics
from activities.projections import ProjectionActivities
from activities.store.sqlite import SqliteStore
from temporal_workflows.contracts import ProjectionBatch, RunProjection
from temporal_workflows.read_model import run_event
from tests.store.builders import new_id, run


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
    return ProjectionBatch(runs=writes, order="rr")


async def test_a_workflow_task_run_again_logs_its_run_events_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "trellis.db")
    await store.connect()
    try:
        workflow_id = new_id()
        record = await store.insert_run(run(workflow_id))
        projections = ProjectionActivities(store, RunMetrics(CollectorRegistry()))

        await projections.record_batch(_task_batch(record.id, workflow_id, "10:00:00Z"))
        # The same task again, from history, seconds later.
        await projections.record_batch(_task_batch(record.id, workflow_id, "10:00:13Z"))

        events = await store.list_events(record.id, 0, 10)
        assert [(e["type"], e["timestamp"]) for e in events] == [
            ("run_started", "10:00:00Z"),
            ("awaiting_approval", "10:00:00Z"),
        ]
        stored = await store.get_run(record.id)
        assert stored is not None and stored.status == "awaiting_approval"
    finally:
        await store.close()
