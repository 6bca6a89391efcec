"""A `buffer_all` schedule paused while its worker is killed: Temporal holds the firings
due meanwhile behind the one whose trigger waits for a worker, and drops them once that
one ends while the schedule is paused. The pause records each in the schedule's skips."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.polling import eventually
from tests.support.processes import Processes, process_env

ECHO = {"nodes": [{"id": "a", "name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}


@pytest.mark.long
async def test_a_pause_records_the_firings_it_drops_from_the_buffer(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(tmp_path, temporal_env.client.service_client.config.target_host)
    api = processes.api(env)
    first = processes.worker(env)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as client:
        wf, run_id = await create_and_trigger(client, ECHO)
        await wait_for(client, wf, run_id, lambda r: r["status"] == "completed")
        schedules = f"/api/v1/workflows/{wf}/schedules"
        body = {"intervalSeconds": 2, "overlapPolicy": "buffer_all"}
        created = await client.post(schedules, json=body)
        assert created.status_code == 201, created.text
        one = f"{schedules}/{created.json()['id']}"
        handle = temporal_env.client.get_schedule_handle(created.json()["id"])

        async def runs() -> list[dict[str, Any]]:
            listed = await client.get(f"/api/v1/workflows/{wf}/runs", params={"perPage": 100})
            return [r for r in listed.json()["runs"] if r["scheduleId"]]

        await eventually(lambda: runs(), within=20)  # the worker serves the schedule
        first.kill()

        async def buffered() -> int | None:
            # One firing waits for a worker; those due after it wait behind it.
            size = (await handle.describe()).raw_description.info.buffer_size
            return size if size >= 3 else None

        held = await eventually(buffered, within=30)
        paused = await client.post(f"{one}/pause")
        assert paused.status_code == 200, paused.text
        note = paused.json()["note"]
        assert note.startswith("Paused by dev through the Trellis API, dropping "), note
        dropped = int(note.split("dropping ")[1].split()[0])
        # As read before the pause (a firing due in between would wait unrecorded).
        assert held <= dropped <= (await handle.describe()).raw_description.info.buffer_size
        assert note.endswith(f"dropping {dropped} firings that waited behind an open one")

        # The next worker starts the run of the firing that waited; none of those behind it.
        processes.worker(env)

        async def ended() -> dict[str, Any] | None:
            # Every firing Temporal started has its run, listed (the waiting one's may have
            # been written before the kill, its trigger ending only now).
            shown: dict[str, Any] = (await client.get(one)).json()
            started = [a["runId"] for a in shown["recentActions"]]
            if not started or not all(started):
                return None
            listed = {r["id"] for r in await runs()}
            return shown if listed.issuperset(started) else None

        # (After the killed worker's activity times out, when it had taken one.)
        await eventually(ended, within=90)

        async def drained() -> bool:
            return (await handle.describe()).raw_description.info.buffer_size == 0

        await eventually(drained, within=30)
        skips = (await client.get(f"{one}/skips")).json()["skips"]
        reasons = [s["reason"] for s in skips]
        assert len(reasons) == dropped, reasons
        assert all(r.startswith("dropped: the schedule was paused") for r in reasons), reasons
        # A pause repeated records nothing more; an unpause does not bring them back.
        assert (await client.post(f"{one}/pause")).status_code == 200
        assert len((await client.get(f"{one}/skips")).json()["skips"]) == dropped
        count = len(await runs())
        assert (await client.post(f"{one}/unpause")).status_code == 200
        await asyncio.sleep(2.5)
        assert len(await runs()) <= count + 2  # its interval's next firings only
        await client.delete(one)
