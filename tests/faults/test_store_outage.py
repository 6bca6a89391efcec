"""The store unavailable for a few seconds under load: reads answer 503 `database_error`,
read-model writes are retried, no run is lost, and the reconciler catches up."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.store.factory import open_store
from app.main import create_app
from app.reconciler import Reconciler
from app.settings import Settings
from app.temporal import with_pydantic
from app.worker import build_worker
from tests.builders import retries, step
from tests.faults.harness import REPORTS, Load, create_workflow
from tests.support.outage import StoreOutage
from tests.support.server import serving

RUNS = 30
OUTAGE_SECONDS = 3.0


async def test_store_unavailable_for_seconds_under_load(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    real = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await real.connect()
    outage = StoreOutage(real)
    client = with_pydantic(temporal_env.client)
    task_queue = f"tq-{uuid.uuid4()}"
    catalog = load_catalog(None)
    await catalog.start()
    registry = ExecutorRegistry(catalog)
    worker = build_worker(client, task_queue=task_queue, store=outage.store, executor=registry)
    settings = Settings(data_dir=tmp_path, task_queue=task_queue)
    app = create_app(settings, store=outage.store, temporal=client, catalog=catalog)
    reconciler = Reconciler(client, outage.store, task_queue=task_queue, interval=0.5)
    delays = [step(f"Wait {i}", "builtin:delay", {"seconds": 0.3}) for i in range(3)]
    long = step("Long", "builtin:delay", {"seconds": 60}, stepConfig=retries(0))
    try:
        async with worker, serving(app) as url, httpx.AsyncClient(base_url=url) as api:
            reconciling = asyncio.create_task(reconciler.run_forever())
            wf = await create_workflow(api, delays)
            long_wf = await create_workflow(api, [long])
            doomed = (await api.post(f"/api/v1/workflows/{long_wf}/runs", json={})).json()
            load = Load(lambda: url, wf, RUNS)
            began = time.monotonic()

            async def outage_for_a_while() -> httpx.Response:
                await asyncio.sleep(0.5)
                outage.down = True
                try:
                    read = await api.get(f"/api/v1/workflows/{wf}/runs")
                    # Terminated while nothing can be written: only the reconciler can
                    # correct it, once the store is back.
                    handle = temporal_env.client.get_workflow_handle(doomed["runId"])
                    await handle.terminate(reason="during the outage")
                    await asyncio.sleep(OUTAGE_SECONDS)
                    return read
                finally:
                    outage.down = False

            read, _ = await asyncio.gather(outage_for_a_while(), load.run(within=60, spacing=0.05))
            statuses = await load.settle(within=90)
            deadline = time.monotonic() + 30
            while True:
                corrected = (
                    await api.get(f"/api/v1/workflows/{long_wf}/runs/{doomed['runId']}")
                ).json()
                if corrected["status"] != "running" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            reconciling.cancel()
    finally:
        await registry.close()
        await catalog.close()
        await real.close()

    tally = load.tally(f"store unavailable {OUTAGE_SECONDS:.0f} s", statuses, None)
    tally.seconds = round(time.monotonic() - began, 1)
    tally.notes.append(f"{outage.refused} store calls refused during the outage")
    REPORTS.append(tally)
    assert read.status_code == 503
    assert read.json()["error"]["code"] == "database_error"
    assert outage.refused > 0
    assert tally.started == RUNS
    assert tally.lost == 0, (tally, statuses)
    assert corrected["status"] == "failed", corrected
    assert corrected["errorSummary"] == "Terminated in Temporal: during the outage"
