"""The one start path: a refused start is a 503 and a failed run; starting again is safe;
a trigger whose start was lost (the API died, Temporal refused) is started by its retry."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowHandle,
)

from activities.executors.catalog import load_catalog
from activities.run_start import RunIdTaken, RunStarter, new_run_record, start_run_workflow
from activities.store.records import WorkflowRecord
from app.main import create_app
from app.settings import Settings
from tests.support.platform import Platform
from tests.support.server import serving

ECHO = {"nodes": [{"id": "a", "name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}


@pytest.fixture
async def refusing_api(
    platform: Platform, refusing_client: Client
) -> AsyncIterator[httpx.AsyncClient]:
    """The API over the platform's store, talking to a Temporal that refuses every start."""
    catalog = load_catalog(None)
    await catalog.start()
    settings = Settings(data_dir=".", task_queue=platform.task_queue)
    app = create_app(settings, store=platform.store, temporal=refusing_client, catalog=catalog)
    try:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as api:
            yield api
    finally:
        await catalog.close()


class _NeverStart(Interceptor):
    """Every workflow start hangs: the API is as good as dead between record and start."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _HangingStarts(next)


class _HangingStarts(OutboundInterceptor):
    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.fixture
async def dying_api(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    """An API over the platform's store whose starts never happen; closing it cancels them."""
    config = platform.client.config()
    config["interceptors"] = [_NeverStart()]
    catalog = load_catalog(None)
    await catalog.start()
    settings = Settings(data_dir=".", task_queue=platform.task_queue)
    app = create_app(settings, store=platform.store, temporal=Client(**config), catalog=catalog)
    try:
        async with (
            serving(app, graceful_seconds=0.1) as url,
            httpx.AsyncClient(base_url=url, timeout=1) as api,
        ):
            yield api
    finally:
        await catalog.close()


async def workflow_of(platform: Platform, workflow_id: str) -> WorkflowRecord:
    record = await platform.store.get_workflow(workflow_id)
    assert record is not None
    return record


async def executions(platform: Platform, run_id: str) -> int:
    return (await platform.client.count_workflows(f"WorkflowId = '{run_id}'")).count


class TestRefusedStart:
    async def test_a_trigger_temporal_refuses_is_503_and_the_run_is_failed(
        self, platform: Platform, refusing_api: httpx.AsyncClient
    ) -> None:
        wf = await platform.create(ECHO)
        response = await refusing_api.post(f"/api/v1/workflows/{wf}/runs", json={})
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "service_unavailable"
        assert error["message"].startswith("Temporal did not accept the run: ")
        [run] = (await platform.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
        assert run["status"] == "failed" and run["finishedAt"]
        assert run["errorSummary"].startswith("Run could not be started: ")

    async def test_a_lineage_start_temporal_refuses_is_503_and_the_child_is_failed(
        self, platform: Platform, refusing_api: httpx.AsyncClient
    ) -> None:
        wf = await platform.create(ECHO)
        source = await platform.trigger(wf)
        await platform.wait(wf, source)
        response = await refusing_api.post(f"/api/v1/workflows/{wf}/runs/{source}/replay")
        assert response.status_code == 503
        children = await platform.api.get(f"/api/v1/workflows/{wf}/runs/{source}/children")
        [child] = children.json()["runs"]
        assert child["status"] == "failed"
        assert child["errorSummary"].startswith("Run could not be started: ")

    async def test_without_marking_a_refused_start_leaves_the_run_pending(
        self, platform: Platform, refusing_client: Client
    ) -> None:
        workflow = await workflow_of(platform, await platform.create(ECHO))
        starter = RunStarter(platform.store, refusing_client, platform.task_queue)
        record = new_run_record(workflow, "manual", {})
        with pytest.raises(Exception, match="Temporal did not accept the run"):
            await starter.start(workflow, record, mark_failed=False)
        stored = await platform.store.get_run(record.id)
        assert stored is not None and stored.status == "pending"


class TestStartingAgain:
    async def test_a_recorded_run_whose_workflow_never_started_is_started(
        self, platform: Platform
    ) -> None:
        workflow = await workflow_of(platform, await platform.create(ECHO))
        record = new_run_record(workflow, "manual", {})
        await platform.store.insert_run(record)  # as if the API died before starting it
        starter = RunStarter(platform.store, platform.client, platform.task_queue)
        await starter.start(workflow, record)
        run = await platform.wait(workflow.id, record.id)
        assert run["status"] == "completed"

    async def test_starting_a_finished_run_again_starts_nothing(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id)
        stored = await platform.store.get_run(run_id)
        assert stored is not None
        starter = RunStarter(platform.store, platform.client, platform.task_queue)
        again = await starter.start(await workflow_of(platform, wf), stored)
        assert again.status == "completed"
        assert await executions(platform, run_id) == 1

    async def test_a_closed_workflow_is_not_run_twice_for_a_still_pending_record(
        self, platform: Platform
    ) -> None:
        workflow = await workflow_of(platform, await platform.create(ECHO))
        record = new_run_record(workflow, "manual", {})
        # Its workflow ran and closed before any record existed (its writes found none).
        await start_run_workflow(platform.client, record, task_queue=platform.task_queue)
        await platform.client.get_workflow_handle(record.id).result()
        await platform.store.insert_run(record)
        starter = RunStarter(platform.store, platform.client, platform.task_queue)
        stored = await starter.start(workflow, record.model_copy())
        assert stored.status == "pending"
        assert await executions(platform, record.id) == 1

    async def test_a_record_written_anew_for_a_closed_workflow_is_taken_back(
        self, platform: Platform
    ) -> None:
        # The store has no run of the id, Temporal a closed workflow (the run retention
        # deleted its run): this start's record could never start, so it is not kept.
        workflow = await workflow_of(platform, await platform.create(ECHO))
        record = new_run_record(workflow, "manual", {})
        await start_run_workflow(platform.client, record, task_queue=platform.task_queue)
        await platform.client.get_workflow_handle(record.id).result()
        starter = RunStarter(platform.store, platform.client, platform.task_queue)
        with pytest.raises(RunIdTaken):
            await starter.start(workflow, record)
        assert await platform.store.get_run(record.id) is None
        assert await executions(platform, record.id) == 1


class TestLostTriggers:
    async def test_a_trigger_cut_off_between_record_and_start_is_started_by_its_retry(
        self, platform: Platform, dying_api: httpx.AsyncClient
    ) -> None:
        wf = await platform.create(ECHO)
        key = {"Idempotency-Key": f"order-{uuid.uuid4().hex}"}
        with pytest.raises(httpx.ReadTimeout):
            await dying_api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)
        [recorded] = (await platform.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
        assert recorded["status"] == "pending"

        retried = await platform.api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)

        assert retried.status_code == 202, retried.text
        assert retried.json()["runId"] == recorded["id"]
        run = await platform.wait(wf, recorded["id"])
        assert run["status"] == "completed", run
        assert await executions(platform, recorded["id"]) == 1

    async def test_a_trigger_temporal_refused_is_started_by_its_retry(
        self, platform: Platform, refusing_api: httpx.AsyncClient
    ) -> None:
        wf = await platform.create(ECHO)
        key = {"Idempotency-Key": f"order-{uuid.uuid4().hex}"}
        refused = await refusing_api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)
        assert refused.status_code == 503
        [failed] = (await platform.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
        assert failed["status"] == "failed"

        retried = await platform.api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)

        assert retried.status_code == 202, retried.text
        assert retried.json()["runId"] == failed["id"]
        run = await platform.wait(wf, failed["id"])
        assert run["status"] == "completed", run
        assert run["errorSummary"] is None and run["finishedAt"] is not None

    async def test_a_retry_of_a_finished_run_returns_it_and_starts_nothing(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        key = {"Idempotency-Key": f"order-{uuid.uuid4().hex}"}
        first = await platform.api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)
        run_id = first.json()["runId"]
        await platform.wait(wf, run_id)

        again = await platform.api.post(f"/api/v1/workflows/{wf}/runs", json={}, headers=key)

        assert again.status_code == 202 and again.json()["runId"] == run_id
        assert await executions(platform, run_id) == 1

    async def test_a_start_that_reported_failure_but_ran_reads_as_it_ran(
        self, platform: Platform
    ) -> None:
        workflow = await workflow_of(platform, await platform.create(ECHO))
        record = new_run_record(workflow, "manual", {})
        await platform.store.insert_run(record)
        # The start's answer was lost (a deadline exceeded): marked failed, yet it runs.
        await RunStarter(platform.store, platform.client, platform.task_queue)._mark_start_failed(
            record.id, "deadline exceeded"
        )
        await start_run_workflow(platform.client, record, task_queue=platform.task_queue)

        run = await platform.wait(workflow.id, record.id, {"completed"})
        assert run["finalOutput"] is not None
