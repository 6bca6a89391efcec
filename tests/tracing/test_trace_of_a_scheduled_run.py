"""A run a schedule starts is traced under the schedule's activity: the worker's traced
client starts it, inside the activity that starts scheduled runs."""

from __future__ import annotations

from typing import Any

from tests.builders import echo
from tests.support.polling import eventually
from tests.tracing.conftest import Traced
from tests.tracing.test_trace_of_a_run import chain

DAILY = {"cron": "0 9 * * 1-5", "timeZone": "UTC"}


async def test_a_scheduled_runs_trace_starts_at_the_schedules_workflow(traced: Traced) -> None:
    p = traced.platform
    workflow_id = await p.create({"nodes": [echo("only")]})
    schedules = f"/api/v1/workflows/{workflow_id}/schedules"
    created = await p.api.post(schedules, json=DAILY)
    assert created.status_code == 201, created.text
    schedule_id = created.json()["id"]
    try:
        fired = await p.api.post(f"{schedules}/{schedule_id}/trigger")
        assert fired.status_code == 202, fired.text

        async def runs() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = (
                await p.api.get(f"/api/v1/workflows/{workflow_id}/runs")
            ).json()["runs"]
            return found

        [listed] = await eventually(runs)
        run = await p.wait(workflow_id, listed["id"])
        assert run["status"] == "completed", run
    finally:
        await p.api.delete(f"{schedules}/{schedule_id}")

    spans = traced.spans()
    [workflow] = [s for s in spans if s.name == "RunWorkflow:TrellisRun"]
    # The Temporal server starts the schedule's own workflow (no caller, no context), so
    # the activity that starts the run is the trace's root.
    assert chain(workflow, spans)[1:] == [
        "StartWorkflow:TrellisRun",
        "RunActivity:start_scheduled_run",
    ]
    [activity] = [s for s in spans if s.name == "RunActivity:start_scheduled_run"]
    assert activity.parent is None
