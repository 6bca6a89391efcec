"""A trigger whose start is overtaken (the reconciler starts the run while the API's
start waits): Temporal's "already started" is then the run's own workflow, not a deleted
run's, and the record (with its offloaded input) is kept; the run completes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.client import (
    Client,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowExecutionDescription,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from activities.executors.catalog import load_catalog
from app.main import create_app
from app.settings import Settings
from tests.engine.test_run_start import ECHO, executions
from tests.support.platform import Platform
from tests.support.reconciling import eager
from tests.support.server import serving

BIG = "x" * (300 * 1024)  # over the 256 KiB offload: the input is a stored payload


class _Overtaken(Interceptor):
    """Before the API's start reaches Temporal, the reconciler starts the run; the API's
    start then asks Temporal to refuse a running workflow (as USE_EXISTING would not), so
    it gets the "already started" it would for a closed one. `describe_fails`: Temporal
    cannot say afterwards whose workflow it is."""

    def __init__(self, platform: Platform, describe_fails: bool) -> None:
        self.platform, self.describe_fails = platform, describe_fails

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _OvertakenStarts(next, self)


class _OvertakenStarts(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, hook: _Overtaken) -> None:
        super().__init__(next)
        self.hook = hook

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        assert input.id in await eager(self.hook.platform).reconcile_once()
        input.id_conflict_policy = WorkflowIDConflictPolicy.FAIL
        return await super().start_workflow(input)

    async def describe_workflow(self, input: DescribeWorkflowInput) -> WorkflowExecutionDescription:
        if self.hook.describe_fails:
            raise RPCError("Temporal is down", RPCStatusCode.UNAVAILABLE, b"")
        return await super().describe_workflow(input)


@pytest.fixture(params=[False, True], ids=["described", "describe-fails"])
async def overtaken_api(
    platform: Platform, request: pytest.FixtureRequest
) -> AsyncIterator[httpx.AsyncClient]:
    config = platform.client.config()
    config["interceptors"] = [_Overtaken(platform, describe_fails=request.param)]
    catalog = load_catalog(None)
    await catalog.start()
    settings = Settings(data_dir=".", task_queue=platform.task_queue)
    app = create_app(settings, store=platform.store, temporal=Client(**config), catalog=catalog)
    try:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as api:
            yield api
    finally:
        await catalog.close()


async def test_a_start_the_reconciler_overtook_keeps_the_record_and_the_run_completes(
    platform: Platform, overtaken_api: httpx.AsyncClient
) -> None:
    wf = await platform.create(ECHO)
    body = {"initialInput": {"big": BIG}}
    key = {"Idempotency-Key": f"order-{uuid.uuid4().hex}"}

    answer = await overtaken_api.post(f"/api/v1/workflows/{wf}/runs", json=body, headers=key)

    assert answer.status_code == 202, answer.text
    run_id = answer.json()["runId"]
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run
    assert run["initialInput"] == {"big": BIG}
    assert await executions(platform, run_id) == 1
