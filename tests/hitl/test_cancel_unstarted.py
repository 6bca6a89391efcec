"""A run whose workflow never started is cancelled for good: no later start runs it."""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

from activities.run_start import new_run_id, new_run_record, start_run_workflow
from activities.start_claim import cancel_if_cancelled, claim_start
from activities.store.records import RunRecord
from tests.builders import echo
from tests.hitl.helpers import control
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.reconciling import eager

KEY = "order-unstarted"


async def never_started(platform: Platform) -> tuple[str, RunRecord]:
    """A run recorded for a trigger with an Idempotency-Key, whose API died before starting it."""
    wf = await platform.create({"nodes": [echo("a")]})
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    record = new_run_record(workflow, "manual", {}, run_id=new_run_id(wf, KEY), idempotency_key=KEY)
    await platform.store.insert_run(record)
    return wf, record


async def workflow_exists(platform: Platform, run_id: str) -> bool:
    try:
        await platform.client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        assert exc.status == RPCStatusCode.NOT_FOUND
        return False
    return True


async def event_types(platform: Platform, run_id: str) -> list[str]:
    return [e["type"] for e in await platform.store.list_events(run_id, 0, 100)]


async def test_cancelling_a_never_started_run_is_200_and_ends_it_cancelled(
    platform: Platform,
) -> None:
    wf, record = await never_started(platform)

    response = await control(platform, wf, record.id, "cancel")

    assert response.status_code == 200, response.text
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{record.id}")).json()
    assert run["status"] == "cancelled" and run["finishedAt"] is not None
    assert await event_types(platform, record.id) == ["cancel_requested", "run_cancelled"]


async def test_the_reconciler_does_not_start_a_run_cancelled_before_it_started(
    platform: Platform,
) -> None:
    wf, record = await never_started(platform)
    assert (await control(platform, wf, record.id, "cancel")).status_code == 200

    assert record.id not in await eager(platform).reconcile_once()

    assert not await workflow_exists(platform, record.id)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{record.id}")).json()
    assert run["status"] == "cancelled"


async def test_a_repeated_trigger_answers_the_cancelled_run_and_starts_nothing(
    platform: Platform,
) -> None:
    wf, record = await never_started(platform)
    assert (await control(platform, wf, record.id, "cancel")).status_code == 200

    repeat = await platform.api.post(
        f"/api/v1/workflows/{wf}/runs", json={"initialInput": {}}, headers={"Idempotency-Key": KEY}
    )

    assert repeat.status_code == 202, repeat.text
    assert repeat.json()["runId"] == record.id
    assert not await workflow_exists(platform, record.id)
    assert await event_types(platform, record.id) == ["cancel_requested", "run_cancelled"]


async def test_a_run_whose_claimed_start_never_reached_temporal_is_cancelled_for_good(
    platform: Platform,
) -> None:
    # A starter claimed the run, then died (or Temporal refused it) before the start.
    wf, record = await never_started(platform)
    assert (await claim_start(platform.store, record)).status == "pending"

    assert (await control(platform, wf, record.id, "cancel")).status_code == 200

    assert record.id not in await eager(platform).reconcile_once()
    assert not await workflow_exists(platform, record.id)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{record.id}")).json()
    assert run["status"] == "cancelled" and run["finishedAt"] is not None
    assert await event_types(platform, record.id) == ["cancel_requested", "run_cancelled"]


async def test_a_start_in_flight_when_the_run_is_cancelled_is_cancelled_in_temporal(
    platform: Platform,
) -> None:
    wf, record = await never_started(platform)
    assert (await claim_start(platform.store, record)).status == "pending"
    assert (await control(platform, wf, record.id, "cancel")).status_code == 200

    # The claimed start reaches Temporal after the cancel answered.
    await start_run_workflow(platform.client, record, task_queue=platform.task_queue)
    await cancel_if_cancelled(platform.store, platform.client, record.id)

    await eventually(lambda: _closed(platform, record.id), within=10)
    run = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{record.id}")).json()
    assert run["status"] == "cancelled"


async def _closed(platform: Platform, run_id: str) -> bool:
    description = await platform.client.get_workflow_handle(run_id).describe()
    return description.close_time is not None


async def test_cancelling_a_finished_run_is_still_409(platform: Platform) -> None:
    wf, record = await never_started(platform)
    assert (await control(platform, wf, record.id, "cancel")).status_code == 200

    again = await control(platform, wf, record.id, "cancel")

    assert again.status_code == 409, again.text
