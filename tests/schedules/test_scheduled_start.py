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

    for number in (1, 2):
        with pytest.raises(RunStartFailed):
            await attempt(number, of=3).run(activities.start_scheduled_run, request)
        run = await platform.store.get_run(request.run_id)
        assert run is not None and run.status == "pending"

    with pytest.raises(RunStartFailed):
        await attempt(3, of=3).run(activities.start_scheduled_run, request)
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
        await attempt(1, of=3).run(refused.start_scheduled_run, request)

    accepted = SchedulingActivities(platform.store, platform.client)
    env = attempt(2, of=3)
    env.info = dataclasses.replace(env.info, task_queue=platform.task_queue)
    result = await env.run(accepted.start_scheduled_run, request)
    assert result.run_id == request.run_id
    run = await platform.wait(wf, request.run_id)
    assert run["status"] == "completed" and run["triggerSource"] == "schedule"
