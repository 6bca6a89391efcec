"""Deleting a workflow cancels its open runs through Temporal before deleting its records."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus

from activities.executors.catalog import load_catalog
from activities.run_start import new_run_record, start_run_workflow
from activities.start_claim import cancel_if_cancelled, claim_start
from app.errors import ServiceUnavailable
from app.services.definitions import DefinitionService
from app.services.run_cancel import RunCanceller
from app.services.schedule_removal import REMOVAL_RPC_TIMEOUT, ScheduleRemover
from app.settings import Settings
from app.temporal_link import TemporalLink
from tests.support.cutting_proxy import CuttingProxy
from tests.support.platform import Platform
from tests.support.polling import eventually

LONG = {
    "nodes": [
        {
            "id": "wait",
            "name": "wait",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"seconds": 30},
        },
    ]
}


async def temporal_status(platform: Platform, run_id: str) -> WorkflowExecutionStatus | None:
    return (await platform.client.get_workflow_handle(run_id).describe()).status


class TestDeleteCancelsRuns:
    async def test_the_running_run_is_cancelled_then_its_records_deleted(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(LONG)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        record = await platform.store.get_workflow(wf)
        assert record is not None
        link = TemporalLink(Settings(), platform.client)
        service = DefinitionService(
            platform.store, load_catalog(None), RunCanceller(platform.store, link)
        )
        started = asyncio.get_running_loop().time()
        await service.delete(record)
        assert asyncio.get_running_loop().time() - started < 5
        assert await temporal_status(platform, run_id) == WorkflowExecutionStatus.CANCELED
        assert await platform.store.get_run(run_id) is None
        assert await platform.store.list_node_runs([run_id]) == []

    async def test_a_run_triggered_while_the_delete_cancels_runs_is_refused(
        self, platform: Platform
    ) -> None:
        # It started, and its record went with the workflow's: a run in Temporal that no
        # one could see or stop through Trellis.
        wf = await platform.create(LONG)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        record = await platform.store.get_workflow(wf)
        assert record is not None
        refused: list[httpx.Response] = []

        class TriggeringMeanwhile(RunCanceller):
            async def cancel_open_runs(self, workflow_id: str) -> list[str]:
                refused.append(
                    await platform.api.post(
                        f"/api/v1/workflows/{workflow_id}/runs",
                        json={"triggerSource": "manual", "initialInput": {}},
                    )
                )
                return await super().cancel_open_runs(workflow_id)

        link = TemporalLink(Settings(), platform.client)
        service = DefinitionService(
            platform.store, load_catalog(None), TriggeringMeanwhile(platform.store, link)
        )
        await service.delete(record)
        [response] = refused
        assert response.status_code == 400, response.text
        assert "disabled" in response.json()["error"]["message"]
        assert await temporal_status(platform, run_id) == WorkflowExecutionStatus.CANCELED
        assert await platform.store.get_workflow(wf) is None

    async def test_a_delete_refused_before_any_record_went_leaves_it_enabled(
        self, platform: Platform
    ) -> None:
        # Disabled first, it stayed disabled when Temporal refused the cancels: the error
        # said nothing of it.
        wf = await platform.create(LONG)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        record = await platform.store.get_workflow(wf)
        assert record is not None
        unreachable = TemporalLink(Settings(temporal_address="127.0.0.1:1"))
        service = DefinitionService(
            platform.store, load_catalog(None), RunCanceller(platform.store, unreachable)
        )
        with pytest.raises(ServiceUnavailable):
            await service.delete(record)
        kept = await platform.store.get_workflow(wf)
        assert kept is not None and kept.enabled
        assert await platform.store.get_run(run_id) is not None

    async def test_a_workflow_without_open_runs_is_deleted_without_temporal(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(LONG, enable=False)
        record = await platform.store.get_workflow(wf)
        assert record is not None
        # An address nothing listens on: the delete must not need it.
        unreachable = TemporalLink(Settings(temporal_address="127.0.0.1:1"))
        service = DefinitionService(
            platform.store,
            load_catalog(None),
            RunCanceller(platform.store, unreachable),
            ScheduleRemover(unreachable, platform.store),
        )
        await service.delete(record)
        assert await platform.store.get_workflow(wf) is None

    async def test_a_workflow_without_open_runs_is_deleted_while_temporal_hangs(
        self, platform: Platform
    ) -> None:
        # A Temporal that hangs rather than refuses (stopped, overloaded) held the delete
        # 30 s, then 503: the workflow stayed, enabled, its schedule firing on.
        wf = await platform.create(LONG)
        made = await platform.api.post(
            f"/api/v1/workflows/{wf}/schedules", json={"intervalSeconds": 3600}
        )
        assert made.status_code == 201, made.text
        record = await platform.store.get_workflow(wf)
        assert record is not None
        host, port = platform.client.service_client.config.target_host.rsplit(":", 1)
        async with CuttingProxy(host, int(port)).running() as proxy:
            hanging = TemporalLink(Settings(temporal_address=proxy.address))
            await hanging.require()
            proxy.frozen = True
            service = DefinitionService(
                platform.store,
                load_catalog(None),
                RunCanceller(platform.store, hanging),
                ScheduleRemover(hanging, platform.store),
            )
            began = asyncio.get_running_loop().time()
            await service.delete(record)
            took = asyncio.get_running_loop().time() - began
        assert await platform.store.get_workflow(wf) is None
        assert took < REMOVAL_RPC_TIMEOUT.total_seconds() + 5
        # Left to delete itself at its next firing (an hour away): deleted here instead.
        await platform.client.get_schedule_handle(made.json()["id"]).delete()

    async def test_a_start_racing_the_delete_is_cancelled_in_temporal(
        self, platform: Platform
    ) -> None:
        # A run recorded and claimed by its trigger, not yet started when the delete
        # cancelled the open runs: Temporal knew nothing to cancel, the delete took the
        # record, and the start then ran its workflow on with nothing in Trellis to show
        # or stop it (an outside audit saw 1 to 10 of 10 triggers sent with a delete).
        wf = await platform.create(LONG)
        workflow = await platform.store.get_workflow(wf)
        assert workflow is not None
        record = new_run_record(workflow, "manual", {})
        await platform.store.insert_run(record)
        assert (await claim_start(platform.store, record)).status == "pending"
        assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
        assert await platform.store.get_run(record.id) is None

        # The claimed start reaches Temporal after the delete answered.
        await start_run_workflow(platform.client, record, task_queue=platform.task_queue)
        await cancel_if_cancelled(platform.store, platform.client, record.id)

        async def cancelled() -> bool:
            return await temporal_status(platform, record.id) == WorkflowExecutionStatus.CANCELED

        await eventually(cancelled)

    async def test_delete_over_http_cancels_the_running_run(self, platform: Platform) -> None:
        wf = await platform.create(LONG)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
        assert await temporal_status(platform, run_id) == WorkflowExecutionStatus.CANCELED
