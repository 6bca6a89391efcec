"""A schedule's start Temporal refuses: retried with the same run id, failed on the last attempt."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.testing import ActivityEnvironment

from activities.run_start import RunStartFailed
from activities.scheduling import SchedulingActivities
from temporal_workflows.schedule_trigger import ScheduledRunRequest, ScheduleTriggerInput
from tests.support.platform import Platform

ECHO = {"nodes": [{"id": "a", "name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}


def attempt(number: int, of: int) -> ActivityEnvironment:
    """An activity context as Temporal gives it to attempt `number` of `of`."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, attempt=number, retry_policy=RetryPolicy(maximum_attempts=of)
    )
    return env


async def test_a_refused_start_stays_pending_until_the_last_attempt_fails_it(
    platform: Platform, refusing_client: Client
) -> None:
    wf = await platform.create(ECHO)
    activities = SchedulingActivities(platform.store, refusing_client)
    request = ScheduledRunRequest(
        run_id=f"run-{uuid.uuid4()}",
        trigger=ScheduleTriggerInput(schedule_id=f"sched-{wf}-x", workflow_id=wf),
    )

    # From the second attempt: the first asks whether the schedule is still there, which a
    # client of a missing namespace cannot (its own test is below).
    for number in (2, 3):
        with pytest.raises(RunStartFailed):
            await attempt(number, of=4).run(activities.start_scheduled_run, request)
        run = await platform.store.get_run(request.run_id)
        assert run is not None and run.status == "pending"

    with pytest.raises(RunStartFailed):
        await attempt(4, of=4).run(activities.start_scheduled_run, request)
    run = await platform.store.get_run(request.run_id)
    assert run is not None and run.status == "failed"
    assert run.trigger_source == "schedule"
    assert run.error_summary is not None
    assert run.error_summary.startswith("Run could not be started: ")


async def test_a_retried_attempt_starts_the_run_an_earlier_attempt_could_not(
    platform: Platform, refusing_client: Client
) -> None:
    wf = await platform.create(ECHO)
    request = ScheduledRunRequest(
        run_id=f"run-{uuid.uuid4()}",
        trigger=ScheduleTriggerInput(schedule_id=f"sched-{wf}-x", workflow_id=wf),
    )
    with pytest.raises(RunStartFailed):
        refused = SchedulingActivities(platform.store, refusing_client)
        await attempt(2, of=4).run(refused.start_scheduled_run, request)

    accepted = SchedulingActivities(platform.store, platform.client)
    env = attempt(3, of=4)
    env.info = dataclasses.replace(env.info, task_queue=platform.task_queue)
    result = await env.run(accepted.start_scheduled_run, request)
    assert result.run_id == request.run_id
    run = await platform.wait(wf, request.run_id)
    assert run["status"] == "completed" and run["triggerSource"] == "schedule"


async def test_a_firing_that_waited_while_its_schedule_was_deleted_starts_nothing(
    platform: Platform,
) -> None:
    # With the worker down, a firing's trigger waits; the schedule deleted meanwhile still
    # started a run when the worker came back.
    wf = await platform.create(ECHO)
    schedules = f"/api/v1/workflows/{wf}/schedules"
    created = await platform.api.post(schedules, json={"intervalSeconds": 3600, "paused": True})
    assert created.status_code == 201, created.text
    schedule_id = created.json()["id"]
    activities = SchedulingActivities(platform.store, platform.client)
    env = attempt(1, of=3)
    env.info = dataclasses.replace(env.info, task_queue=platform.task_queue)

    def firing() -> ScheduledRunRequest:
        trigger = ScheduleTriggerInput(schedule_id=schedule_id, workflow_id=wf)
        return ScheduledRunRequest(run_id=f"run-{uuid.uuid4()}", trigger=trigger)

    there = firing()  # the schedule there, its firing starts its run
    result = await env.run(activities.start_scheduled_run, there)
    assert result.run_id == there.run_id
    assert (await platform.wait(wf, there.run_id))["status"] == "completed"
    assert (await platform.api.delete(f"{schedules}/{schedule_id}")).status_code == 204
    gone = firing()
    result = await env.run(activities.start_scheduled_run, gone)
    assert (result.run_id, result.skipped_reason) == (None, "schedule deleted")
    assert await platform.store.get_run(gone.run_id) is None
    runs = (await platform.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
    assert [r["id"] for r in runs] == [there.run_id]
