"""A schedule fired now records who fired it: the run it starts carries the caller as
`triggeredBy` (`triggerSource` stays "schedule"); the schedule's own firings name no one
(found by an audit: a fire-now recorded no one but the access log's client IP)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.fired_by import FIRE_LEAD
from app.auth.caller import CONTROL, READ
from temporal_workflows.contracts import Identity
from tests.builders import echo
from tests.hitl.helpers import start
from tests.support.identity import as_user
from tests.support.platform import Platform
from tests.support.polling import eventually

BOB = as_user("bob", [READ, CONTROL])


async def schedule_runs(p: Platform, wf: str, sid: str, at_least: int = 1) -> list[dict[str, Any]]:
    """The runs the schedule started, oldest first, once there are `at_least`, each ended."""

    async def listed() -> list[dict[str, Any]] | None:
        runs = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"]
        ours = [r for r in runs if r["scheduleId"] == sid]
        return ours if len(ours) >= at_least else None

    runs: list[dict[str, Any]] = await eventually(listed, within=15)
    return [await p.wait(wf, r["id"]) for r in reversed(runs)]


async def shared_schedule(p: Platform, body: dict[str, Any]) -> tuple[str, str]:
    """Alice's workflow, which Bob may VIEW, and a schedule of it; (workflow id, schedule id)."""
    wf, _ = await start(p, [echo("only")])
    grants = {"grants": [{"principal": "user:bob", "permissions": ["VIEW"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=grants)).is_success
    made = await p.api.post(f"/api/v1/workflows/{wf}/schedules", json=body)
    assert made.status_code == 201, made.text
    return wf, made.json()["id"]


async def test_a_fire_now_records_who_fired_it(jwt_platform: Platform) -> None:
    p = jwt_platform
    wf, sid = await shared_schedule(p, {"intervalSeconds": 3600, "paused": True})
    schedules = f"/api/v1/workflows/{wf}/schedules"
    try:
        # A schedule that is not there: 404, and no one is kept as having fired anything.
        missing = await p.api.post(f"{schedules}/sched-{wf}-nope/trigger", headers=BOB)
        assert missing.status_code == 404, missing.text
        now = datetime.now(UTC)
        assert (
            await p.store.claim_schedule_fire(f"sched-{wf}-nope", "f", now - FIRE_LEAD, now) is None
        )
        fired = await p.api.post(f"{schedules}/{sid}/trigger", headers=BOB)
        assert fired.status_code == 202, fired.text
        (run,) = await schedule_runs(p, wf, sid)
    finally:
        await p.api.delete(f"{schedules}/{sid}")
    assert run["triggerSource"] == "schedule"
    assert run["triggeredBy"] == {"userId": "bob", "username": None, "scopes": [CONTROL, READ]}
    # As a user trigger's: the identity travels in the run's workflow input, to its steps.
    history = await p.client.get_workflow_handle(run["id"]).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert json.loads(started.input.payloads[0].data)["triggeredBy"]["userId"] == "bob"


async def test_the_schedules_own_firings_name_no_one(jwt_platform: Platform) -> None:
    # Every second is this schedule's own: Bob's fire-now lands in one (Temporal names both
    # firings alike, so it starts no run of its own), and no firing takes his request.
    p = jwt_platform
    wf, sid = await shared_schedule(p, {"intervalSeconds": 1})
    schedules = f"/api/v1/workflows/{wf}/schedules"
    try:
        fired = await p.api.post(f"{schedules}/{sid}/trigger", headers=BOB)
        assert fired.status_code == 202, fired.text
        runs = await schedule_runs(p, wf, sid, at_least=3)
    finally:
        await p.api.delete(f"{schedules}/{sid}")
    assert [r["triggeredBy"] for r in runs] == [None] * len(runs)
    assert {r["triggerSource"] for r in runs} == {"schedule"}


async def test_a_request_older_than_the_lead_names_no_later_firing(
    jwt_platform: Platform,
) -> None:
    # An API that kept Bob's request and died before asking Temporal: a fire-now made later
    # outside Trellis (Temporal's CLI) is not taken for his.
    p = jwt_platform
    wf, sid = await shared_schedule(p, {"intervalSeconds": 3600, "paused": True})
    then = datetime.now(UTC) - FIRE_LEAD - timedelta(seconds=2)
    await p.store.record_schedule_fire(sid, Identity(user_id="bob"), then)
    try:
        await p.client.get_schedule_handle(sid).trigger()
        (run,) = await schedule_runs(p, wf, sid)
    finally:
        await p.api.delete(f"/api/v1/workflows/{wf}/schedules/{sid}")
    assert (run["triggerSource"], run["triggeredBy"]) == ("schedule", None)


async def test_dev_mode_fire_now_records_no_one_as_a_trigger(platform: Platform) -> None:
    # As a run's trigger in dev mode: nobody proved anything.
    wf, _ = await start(platform, [echo("only")])
    schedules = f"/api/v1/workflows/{wf}/schedules"
    made = await platform.api.post(schedules, json={"intervalSeconds": 3600, "paused": True})
    sid = made.json()["id"]
    try:
        assert (await platform.api.post(f"{schedules}/{sid}/trigger")).status_code == 202
        (run,) = await schedule_runs(platform, wf, sid)
    finally:
        await platform.api.delete(f"{schedules}/{sid}")
    assert (run["triggerSource"], run["triggeredBy"]) == ("schedule", None)
