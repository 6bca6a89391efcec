"""A gate's deadline holds whether or not a worker was up when it passed."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from activities.run_start import RunStarter
from activities.store.factory import open_store
from activities.store.records import RunRecord, WorkflowRecord
from app.temporal import with_pydantic
from app.worker import build_worker
from temporal_workflows.contracts import DECIDE
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.gates import Decision
from tests.support.platform import executor_registry
from tests.support.polling import eventually

TIMEOUT_SECONDS = 2
SPEC = WorkflowSpec.model_validate(
    {
        "name": "deadline",
        "nodes": [
            {
                "id": "gate",
                "name": "gate",
                "nodeType": "step",
                "executorKey": "builtin:echo",
                "humanReview": {
                    "requiresConfirmation": True,
                    "timeoutSeconds": TIMEOUT_SECONDS,
                    "onTimeout": "skip",
                },
            },
            {"id": "after", "name": "after", "nodeType": "step", "executorKey": "builtin:echo"},
        ],
    }
)


async def test_a_decision_after_the_deadline_loses_to_the_timer_a_stopped_worker_missed(
    tmp_path: Path, temporal_env: WorkflowEnvironment
) -> None:
    # With no worker up when the timer fired, the timer and a later decision reached the
    # workflow in one task, and the decision was applied first: the deadline did not hold.
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    client = with_pydantic(temporal_env.client, store)
    queue = f"tq-{uuid.uuid4()}"
    record = RunRecord(
        id=f"run-{uuid.uuid4()}",
        workflow_definition_id="wf-deadline",
        workflow_version=1,
        definition_snapshot=SPEC,
    )

    async def status(wanted: str) -> RunRecord | None:
        run = await store.get_run(record.id)
        return run if run is not None and run.status == wanted else None

    try:
        async with executor_registry() as registry:
            async with build_worker(client, task_queue=queue, store=store, executor=registry):
                workflow = WorkflowRecord(id="wf-deadline", enabled=True, **dict(SPEC))
                await store.create_workflow(workflow)  # a run's workflow is stored
                await RunStarter(store, client, queue).start(workflow, record)
                await eventually(lambda: status("awaiting_approval"))
            # No worker now: the gate's timer fires on the server, and then a decision comes.
            await asyncio.sleep(TIMEOUT_SECONDS + 1)
            handle = client.get_workflow_handle(record.id)
            late = asyncio.create_task(
                handle.execute_update(
                    DECIDE,
                    Decision(step_id="gate", resolution="confirm", decided_by="late"),
                    id=f"decide-{uuid.uuid4()}",
                )
            )
            await asyncio.sleep(0.5)  # the update waits at the server for a worker
            async with build_worker(client, task_queue=queue, store=store, executor=registry):
                with pytest.raises(WorkflowUpdateFailedError) as refused:
                    await asyncio.wait_for(late, 30)
                run = await eventually(lambda: status("completed"), within=30)
        statuses = [n.status for n in await store.list_node_runs([record.id])]
    finally:
        await store.close()
    assert "timed out" in str(refused.value.cause)
    decided = run.resolved_requirements[0]
    assert (decided["source"], decided["resolution"]) == ("timeout", "timeout:skip")
    assert statuses == ["skipped", "completed"]
