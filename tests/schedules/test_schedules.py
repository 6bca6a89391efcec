"""Recurring runs on Temporal Schedules, managed through the API."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from activities.scheduling import SchedulingActivities, skip_log_key
from activities.store.base import Store
from activities.store.records import WorkflowRecord
from activities.store.sqlite import SqliteStore
from app.reconciler import Reconciler
from app.schedule_sweep import OrphanSchedules
from app.services.schedule_timing import PROBE_PREFIX, PROBE_WORKFLOW_TYPE
from temporal_workflows import search_attributes
from temporal_workflows.schedule_trigger import (
    SCHEDULE_WORKFLOW_TYPE,
    ScheduledRunRequest,
    ScheduleTriggerInput,
)
from tests.support.platform import Platform
from tests.support.polling import eventually
from tests.support.schedule_list import until_listed

ECHO = {"nodes": [{"id": "a", "name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}
DAILY = {"cron": "0 9 * * 1-5", "timeZone": "Europe/Berlin", "initialInput": {"x": 1}}


def url(workflow_id: str, schedule_id: str = "") -> str:
    return f"/api/v1/workflows/{workflow_id}/schedules" + (f"/{schedule_id}" if schedule_id else "")


@asynccontextmanager
async def schedule(
    platform: Platform, workflow_id: str, body: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """A schedule that is deleted afterwards, so nothing keeps firing on the shared server."""
    response = await platform.api.post(url(workflow_id), json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    await until_listed(platform.api, workflow_id, created["id"])  # so a list read shows it
    try:
        yield created
    finally:
        await platform.api.delete(url(workflow_id, created["id"]))


async def runs_of(platform: Platform, workflow_id: str) -> list[dict[str, Any]]:
    response = await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs")
    runs: list[dict[str, Any]] = response.json()["runs"]
    return runs


class TestFiring:
    async def test_an_interval_schedule_starts_runs_marked_schedule(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        body = {"intervalSeconds": 1, "initialInput": {"n": 3}}
        async with schedule(platform, wf, body) as created:
            runs = await eventually(lambda: runs_of(platform, wf))
        run = await platform.wait(wf, runs[-1]["id"])
        assert run["status"] == "completed" and run["triggerSource"] == "schedule"
        assert run["initialInput"] == {"n": 3}
        # Which schedule started it (two schedules of a workflow were told apart by input).
        assert run["scheduleId"] == runs[-1]["scheduleId"] == created["id"]

    async def test_trigger_fires_once_now(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            response = await platform.api.post(url(wf, created["id"]) + "/trigger")
            assert response.status_code == 202
            # A delete of the schedule at the same moment skips it too, which it says.
            assert response.json()["message"].endswith(
                "unless the overlap policy skips this firing or the schedule is deleted "
                "before the run starts"
            )
            runs = await eventually(lambda: runs_of(platform, wf))
            assert len(runs) == 1 and runs[0]["triggerSource"] == "schedule"
            assert runs[0]["scheduleId"] == created["id"]
            manual_id = await platform.trigger(wf)
            manual = await platform.api.get(f"/api/v1/workflows/{wf}/runs/{manual_id}")
            assert manual.json()["scheduleId"] is None
            # A page of the schedule's runs only; an id no schedule has lists none.
            listed = f"/api/v1/workflows/{wf}/runs"
            for view in ("all", "summary"):
                mine = await platform.api.get(
                    listed, params={"scheduleId": created["id"], "nodeRuns": view}
                )
                assert [r["id"] for r in mine.json()["runs"]] == [runs[0]["id"]]
                assert mine.json()["pagination"]["total"] == 1
            everyone = (await platform.api.get(listed)).json()["runs"]
            assert {r["id"] for r in everyone} == {runs[0]["id"], manual_id}
            none = await platform.api.get(listed, params={"scheduleId": "sched-nothere"})
            assert none.json()["runs"] == []
            empty = await platform.api.get(listed, params={"scheduleId": ""})
            assert empty.status_code == 400, empty.text
            described = (await platform.api.get(url(wf, created["id"]))).json()
            assert described["numActions"] == 1 and len(described["recentActions"]) == 1

    async def test_each_firing_names_the_run_it_started(self, platform: Platform) -> None:
        # A firing showed its trigger workflow's id only, no run's: a console or a script
        # could only guess a firing's run by time.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            one = url(wf, created["id"])
            started: list[str] = []
            for _ in range(2):
                assert (await platform.api.post(one + "/trigger")).status_code == 202

                async def more() -> list[dict[str, Any]] | None:
                    runs = await runs_of(platform, wf)
                    return runs if len(runs) > len(started) else None

                started.append((await eventually(more))[0]["id"])
                await asyncio.sleep(1.1)  # a firing's trigger workflow is named by its second

            async def described_when(ready: Any) -> dict[str, Any]:
                async def read() -> dict[str, Any] | None:
                    found: dict[str, Any] = (await platform.api.get(one)).json()
                    return found if ready(found) else None

                found: dict[str, Any] = await eventually(read)
                return found

            described = await described_when(lambda d: all(a["runId"] for a in d["recentActions"]))
            by_firing = {a["triggerWorkflowId"]: a["runId"] for a in described["recentActions"]}
            assert sorted(by_firing.values()) == sorted(started)
            assert len(by_firing) == 2  # each firing its own run
            # The list names them alike.
            [listed] = (await platform.api.get(url(wf))).json()["schedules"]
            assert {a["runId"] for a in listed["recentActions"]} == set(started)
            # A firing that started no run (the workflow disabled meanwhile) names none.
            await platform.api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": False})
            await platform.client.get_schedule_handle(created["id"]).trigger()
            skipped = await described_when(lambda d: len(d["recentActions"]) == 3)
            newest = max(skipped["recentActions"], key=lambda a: a["startedAt"])
            assert newest["runId"] is None
            assert len(await runs_of(platform, wf)) == 2

    async def test_firings_the_overlap_policy_skipped_are_counted(self, platform: Platform) -> None:
        # Temporal counted them (the Web UI showed it); the API showed nothing of them.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            assert created["numActionsSkippedOverlap"] == 0
            handle = platform.client.get_schedule_handle(created["id"])

            def stalled(current: ScheduleUpdateInput) -> ScheduleUpdate:
                # Its trigger waits on a task queue no worker polls, as with workers down.
                changed = current.description.schedule
                assert isinstance(changed.action, ScheduleActionStartWorkflow)
                changed.action.task_queue = f"nobody-{uuid.uuid4().hex}"
                return ScheduleUpdate(schedule=changed)

            await handle.update(stalled)
            before = await platform.api.get(url(wf, created["id"]))
            await handle.trigger()
            await asyncio.sleep(1.1)  # Temporal names a firing's workflow by its second
            await handle.trigger()  # `skip`: the first still runs

            async def counted() -> dict[str, Any] | None:
                shown = (await platform.api.get(url(wf, created["id"]))).json()
                return shown if shown["numActionsSkippedOverlap"] == 1 else None

            shown = await eventually(counted)
            assert shown["numActions"] == 1
            # Firings change no ETag: a PUT based on the read before them is not refused.
            after = await platform.api.get(url(wf, created["id"]))
            assert after.headers["etag"] == before.headers["etag"]
            kept = {k: v for k, v in before.json().items() if v is not None}
            put = await platform.api.put(
                url(wf, created["id"]), json=kept, headers={"If-Match": before.headers["etag"]}
            )
            assert put.status_code == 200, put.text
            for running in (await handle.describe()).info.running_actions:
                await platform.client.get_workflow_handle(running.workflow_id).terminate()

    async def test_a_disabled_workflow_starts_no_run_and_the_skip_is_recorded(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO, enable=False)
        async with schedule(platform, wf, DAILY) as created:
            # Asked to fire now, the API says why it would start nothing (it answered 202
            # "Schedule fired"), and fires nothing.
            refused = await platform.api.post(url(wf, created["id"]) + "/trigger")
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"]["message"].startswith("Workflow is disabled.")
            described = (await platform.api.get(url(wf, created["id"]))).json()
            assert described["numActions"] == 0
            # One that does not exist is 404, as on an enabled workflow.
            missing = await platform.api.post(url(wf, f"sched-{wf}-000000000000") + "/trigger")
            assert missing.status_code == 404, missing.text
            # Its time come all the same (Temporal fires it), the firing is skipped.
            await platform.client.get_schedule_handle(created["id"]).trigger()

            async def skips() -> list[dict[str, Any]]:
                response = await platform.api.get(url(wf, created["id"]) + "/skips")
                found: list[dict[str, Any]] = response.json()["skips"]
                return found

            [skip] = await eventually(skips)
        assert skip["reason"] == "workflow disabled" and skip["timestamp"]
        assert await runs_of(platform, wf) == []

    async def test_a_schedule_its_deleted_workflow_left_behind_deletes_itself_when_it_fires(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        created = (await platform.api.post(url(wf), json=DAILY)).json()
        handle = platform.client.get_schedule_handle(created["id"])
        # As when the delete could not list it (Temporal down, visibility lagging).
        assert await platform.store.delete_workflow(wf)
        await handle.trigger()

        async def gone() -> bool:
            return not [
                s async for s in await platform.client.list_schedules() if s.id == created["id"]
            ]

        assert await eventually(gone)

    async def test_deleting_the_workflow_deletes_its_schedules_paused_ones_too(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        paused = (await platform.api.post(url(wf), json={**DAILY, "paused": True})).json()
        active = (await platform.api.post(url(wf), json={"intervalSeconds": 3600})).json()

        async def both_listed() -> bool:
            return len((await platform.api.get(url(wf))).json()["schedules"]) == 2

        await eventually(both_listed)
        assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
        # A paused schedule never fires, so it could not delete itself as an active one does.
        for created in (paused, active):
            with pytest.raises(RPCError) as gone:
                await platform.client.get_schedule_handle(created["id"]).describe()
            assert gone.value.status == RPCStatusCode.NOT_FOUND

    async def test_deleting_the_workflow_leaves_schedules_trellis_did_not_make(
        self, platform: Platform
    ) -> None:
        # Every schedule with the workflow's search attribute was deleted, someone else's too.
        wf = await platform.create(ECHO)
        attributes = TypedSearchAttributes(
            [SearchAttributePair(search_attributes.DEFINITION_ID, wf)]
        )
        foreign = {
            f"reports-{wf}": ScheduleActionStartWorkflow(
                "SomeoneElsesWorkflow", id="theirs", task_queue="theirs"
            ),
            f"sched-{wf}-theirs": ScheduleActionStartWorkflow(
                SCHEDULE_WORKFLOW_TYPE, {"report": "weekly"}, id="theirs", task_queue="theirs"
            ),
        }
        for schedule_id, action in foreign.items():
            await platform.client.create_schedule(
                schedule_id,
                Schedule(
                    action=action,
                    spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
                    state=ScheduleState(paused=True),
                ),
                search_attributes=attributes,
            )
        ours = (await platform.api.post(url(wf), json=DAILY)).json()
        try:

            async def all_visible() -> bool:
                query = f"TrellisDefinitionId = '{wf}'"
                ids = {s.id async for s in await platform.client.list_schedules(query=query)}
                return ids == {ours["id"], *foreign}

            await eventually(all_visible)
            assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
            with pytest.raises(RPCError) as gone:
                await platform.client.get_schedule_handle(ours["id"]).describe()
            assert gone.value.status == RPCStatusCode.NOT_FOUND
            for schedule_id in foreign:
                described = await platform.client.get_schedule_handle(schedule_id).describe()
                assert described.schedule.state.paused
        finally:
            for schedule_id in foreign:
                await platform.client.get_schedule_handle(schedule_id).delete()


class TestManaging:
    async def test_create_returns_the_schedule_as_given_with_next_times(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, {**DAILY, "overlapPolicy": "buffer_one"}) as created:
            assert created["id"].startswith(f"sched-{wf}-")
            assert {k: created[k] for k in (*DAILY, "intervalSeconds", "overlapPolicy")} == {
                **DAILY,
                "intervalSeconds": None,
                "overlapPolicy": "buffer_one",
            }
            assert created["paused"] is False and len(created["nextActionTimes"]) == 5
            fetched = (await platform.api.get(url(wf, created["id"]))).json()
            assert fetched["cron"] == DAILY["cron"] and fetched["workflowId"] == wf

    async def test_list_shows_the_workflows_schedules(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        async with (
            schedule(platform, wf, DAILY) as one,
            schedule(platform, wf, {"intervalSeconds": 3600}) as two,
        ):

            async def listed() -> list[str]:
                response = await platform.api.get(url(wf))
                ids = [s["id"] for s in response.json()["schedules"]]
                return ids if len(ids) == 2 else []

            assert set(await eventually(listed)) == {one["id"], two["id"]}

    async def test_put_replaces_timing_and_pauses(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            response = await platform.api.put(
                url(wf, created["id"]),
                json={"intervalSeconds": 120, "overlapPolicy": "allow_all", "paused": True},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["cron"] is None and body["intervalSeconds"] == 120
            assert body["overlapPolicy"] == "allow_all" and body["paused"] is True
            assert body["timeZone"] == "UTC" and body["initialInput"] == {}

    async def test_a_put_that_changes_nothing_leaves_the_schedule_as_it_was(
        self, platform: Platform
    ) -> None:
        # Temporal records every update: a PUT of the schedule as it was moved updatedAt.
        wf = await platform.create(ECHO)
        body = {"cron": "0 9 * * 1-5", "initialInput": {"x": 1}, "paused": True}
        defaults = {"timeZone": "UTC", "overlapPolicy": "skip"}
        async with schedule(platform, wf, body) as created:
            for same in (body, {**body, **defaults}):
                response = await platform.api.put(url(wf, created["id"]), json=same)
                assert response.status_code == 200, response.text
                assert response.json() == created
            assert (await platform.api.get(url(wf, created["id"]))).json() == created
            changed = await platform.api.put(
                url(wf, created["id"]), json={**body, "initialInput": {"x": 2}}
            )
            assert changed.json()["updatedAt"] is not None
            assert changed.json()["initialInput"] == {"x": 2}

    async def test_a_put_of_the_schedule_as_given_undoes_an_edit_made_in_temporal(
        self, platform: Platform
    ) -> None:
        # Such a PUT compared with what Trellis had set, found it equal and left the Web UI's
        # spec in place.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            handle = platform.client.get_schedule_handle(created["id"])
            as_made = (await handle.describe()).schedule

            def edited(current: ScheduleUpdateInput) -> ScheduleUpdate:
                changed = current.description.schedule
                changed.spec = ScheduleSpec(
                    intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]
                )
                changed.policy.catchup_window = timedelta(minutes=5)
                changed.state.paused = True
                return ScheduleUpdate(schedule=changed)

            await handle.update(edited)
            response = await platform.api.put(url(wf, created["id"]), json=DAILY)
            assert response.status_code == 200, response.text
            now = (await handle.describe()).schedule
            assert now.spec == as_made.spec and not now.spec.intervals
            assert now.policy == as_made.policy
            assert now.state.paused is False
            assert response.json()["nextActionTimes"] == created["nextActionTimes"]

    async def test_pause_and_unpause(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            paused = await platform.api.post(url(wf, created["id"]) + "/pause")
            assert paused.json()["paused"] is True
            # Temporal keeps the times it last computed, which then pass: none are shown.
            assert paused.json()["nextActionTimes"] == []
            read = await platform.api.get(url(wf, created["id"]))
            assert read.json()["nextActionTimes"] == []
            resumed = await platform.api.post(url(wf, created["id"]) + "/unpause")
            assert resumed.json()["paused"] is False
            assert len(resumed.json()["nextActionTimes"]) == 5

    async def test_pause_and_unpause_set_updated_at_and_a_repeat_changes_nothing(
        self, platform: Platform
    ) -> None:
        # Both left `updatedAt` null (a PUT set it), though each changes the schedule, as a
        # toggle changes a workflow and moves its `updatedAt`.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            assert created["updatedAt"] is None
            one = url(wf, created["id"])
            times = [created["createdAt"]]
            for action, paused in (("pause", True), ("unpause", False)):
                answered = (await platform.api.post(f"{one}/{action}")).json()
                assert answered["paused"] is paused and answered["updatedAt"] is not None
                assert answered["updatedAt"] > times[-1], (times, answered)
                times.append(answered["updatedAt"])
                read = await platform.api.get(one)
                repeated = await platform.api.post(f"{one}/{action}")
                assert repeated.json() == read.json()  # already so: nothing changes
                assert (await platform.api.get(one)).headers["etag"] == read.headers["etag"]
            # The schedule is as it was made, note aside.
            described = await platform.client.get_schedule_handle(created["id"]).describe()
            assert described.schedule.state.note == "Unpaused by dev through the Trellis API"
            final = (await platform.api.get(one)).json()
            kept = ("cron", "timeZone", "initialInput", "overlapPolicy", "nextActionTimes")
            assert {k: final[k] for k in kept} == {k: created[k] for k in kept}

    async def test_pause_unpause_and_trigger_refuse_a_body_and_change_nothing(
        self, platform: Platform
    ) -> None:
        # `{"note": 5` paused the schedule, answered 200, the body never read (an audit).
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            base = url(wf, created["id"])
            json_type = {"content-type": "application/json"}
            for action in ("pause", "unpause", "trigger"):
                for body in (b'{"note": 5', b'{"note": "why"}'):
                    sent = await platform.api.post(
                        f"{base}/{action}", content=body, headers=json_type
                    )
                    assert sent.status_code == 400, (action, sent.text)
                    assert sent.json()["error"]["message"] == (
                        f"A schedule's {action} takes no body"
                    )
            read = (await platform.api.get(base)).json()
            assert read["paused"] is False and read["recentActions"] == []
            assert await runs_of(platform, wf) == []
            paused = await platform.api.post(f"{base}/pause", json={})
            assert paused.status_code == 200 and paused.json()["paused"] is True

    async def test_delete_removes_the_schedule(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        created = (await platform.api.post(url(wf), json=DAILY)).json()
        assert (await platform.api.delete(url(wf, created["id"]))).status_code == 204
        assert (await platform.api.get(url(wf, created["id"]))).status_code == 404

    async def test_another_workflows_schedule_is_404(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        other = await platform.create(ECHO)
        async with schedule(platform, wf, DAILY) as created:
            response = await platform.api.get(url(other, created["id"]))
            assert response.status_code == 404


class TestValidation:
    async def test_exactly_one_of_cron_and_interval(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        for body in ({}, {"cron": "* * * * *", "intervalSeconds": 60}):
            response = await platform.api.post(url(wf), json=body)
            assert response.status_code == 400
            assert "exactly one of cron and intervalSeconds" in response.text

    async def test_an_invalid_cron_is_400_naming_the_grammar_and_creates_nothing(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        # A final line end passed Python's `$`: "0 * * * *\n" was kept as given.
        bad = ("61 * * * *", "0 0 0 * *", "* * * * * *", "*/0 * * * *", "@reboot")
        for cron in (*bad, "0 * * * *\n", "@daily\n"):
            response = await platform.api.post(url(wf), json={"cron": cron})
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "invalid_request"
            assert "is not a cron expression this API accepts" in response.text
        assert (await platform.api.get(url(wf))).json()["schedules"] == []

    async def test_a_cron_that_never_fires_is_400_and_creates_or_changes_nothing(
        self, platform: Platform
    ) -> None:
        # February 30th and 31st, the 31st of a month of 30 days: each was a 201 with no
        # next times, a schedule that would never fire. A rare date is no error: Temporal
        # requires day of month and day of week both, and a leap day on a Monday comes.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, {"intervalSeconds": 3600}) as kept:
            for cron in ("0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"):
                for method, target in (("POST", url(wf)), ("PUT", url(wf, kept["id"]))):
                    response = await platform.api.request(method, target, json={"cron": cron})
                    assert response.status_code == 400, (method, cron, response.text)
                    error = response.json()["error"]
                    assert error["code"] == "invalid_request"
                    assert error["details"][0]["path"] == "cron"
                    assert "never fires" in error["message"], error
            listed = (await platform.api.get(url(wf))).json()["schedules"]
            assert [(s["id"], s["intervalSeconds"], s["updatedAt"]) for s in listed] == [
                (kept["id"], 3600, None)
            ]

        async def none_listed() -> bool:
            # Temporal's listing (its visibility store) shows the kept one's deletion late.
            return not [s async for s in await platform.client.list_schedules() if wf in s.id]

        await eventually(none_listed)
        leap = await platform.api.post(url(wf), json={"cron": "0 0 29 2 1"})
        assert leap.status_code == 201, leap.text
        assert leap.json()["nextActionTimes"][0].startswith("2044-02-29")
        await platform.api.delete(url(wf, leap.json()["id"]))

    async def test_an_explicit_null_is_400(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(url(wf), json={"cron": None, "intervalSeconds": 60})
        assert response.status_code == 400
        assert "must not be null" in response.text

    async def test_an_unknown_field_is_400_and_creates_or_changes_nothing(
        self, platform: Platform
    ) -> None:
        # A misspelt `timezone` ran in UTC; Temporal's `startAt` or `jitterSeconds`, not
        # offered here, made a schedule that ran at once: each answered 201.
        wf = await platform.create(ECHO)
        hourly = {"cron": "0 * * * *"}
        for field, value in (
            ("timezone", "Europe/Berlin"),
            ("startAt", "2030-01-01T00:00:00Z"),
            ("jitterSeconds", 5),
        ):
            response = await platform.api.post(url(wf), json={**hourly, field: value})
            assert response.status_code == 400, response.text
            assert response.json()["error"]["details"] == [
                {"path": field, "message": "is not a field of this body (see the OpenAPI document)"}
            ]
        assert (await platform.api.get(url(wf))).json()["schedules"] == []
        assert not [s async for s in await platform.client.list_schedules() if wf in s.id]
        async with schedule(platform, wf, {**hourly, "paused": True}) as created:
            refused = await platform.api.put(
                url(wf, created["id"]), json={"intervalSeconds": 60, "endAt": "2031-01-01"}
            )
            assert refused.status_code == 400, refused.text
            assert (await platform.api.get(url(wf, created["id"]))).json() == created
            # What a GET shows can be sent back, its nulls left out: read, change, PUT.
            shown = {k: v for k, v in created.items() if v is not None}
            shown["timeZone"] = "Europe/Berlin"
            changed = await platform.api.put(url(wf, created["id"]), json=shown)
            assert changed.status_code == 200, changed.text
            assert changed.json()["timeZone"] == "Europe/Berlin"

    async def test_an_unknown_time_zone_is_400(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(
            url(wf), json={"cron": "0 * * * *", "timeZone": "Mars/Olympus"}
        )
        assert response.status_code == 400
        assert "unknown IANA time zone" in response.json()["error"]["message"]

    async def test_the_machines_localtime_is_no_time_zone_and_creates_nothing(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(
            url(wf), json={"cron": "0 * * * *", "timeZone": "localtime"}
        )
        assert response.status_code == 400, response.text
        assert "unknown IANA time zone" in response.json()["error"]["message"]
        assert not [s async for s in await platform.client.list_schedules() if wf in s.id]
        document = (await platform.api.get("/openapi.json")).json()
        zones = document["components"]["schemas"]["ScheduleCreate"]["properties"]["timeZone"]
        assert "localtime" not in zones["enum"] and "Europe/Berlin" in zones["enum"]

    async def test_an_input_no_run_can_hold_is_400_and_creates_or_changes_nothing(
        self, platform: Platform
    ) -> None:
        # Each was a 500 that created the schedule anyway; a deep one broke the workflow's
        # schedule list (500) and left a trigger that could never fire. NaN became null.
        deep = '{"a":' * 200 + "1" + "}" * 200
        bad = {
            deep: "initialInput.a.a",
            '{"x": "\\ud800"}': "initialInput.x is not valid Unicode",
            '{"x": NaN}': "initialInput.x is not a finite number",
            # Each firing's workflow task would decode it past Temporal's 2 s.
            '{"xs": [' + ",".join(["0"] * 100_000) + "]}": "holds more than 100000 JSON values",
        }
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, {"intervalSeconds": 3600}) as kept:
            for given, problem in bad.items():
                body = f'{{"intervalSeconds": 60, "initialInput": {given}}}'
                for method, target in (("POST", url(wf)), ("PUT", url(wf, kept["id"]))):
                    response = await platform.api.request(
                        method, target, content=body, headers={"content-type": "application/json"}
                    )
                    assert response.status_code == 400, (method, given[:20], response.text)
                    assert problem in response.text, response.text
            listed = (await platform.api.get(url(wf))).json()["schedules"]
            assert [(s["id"], s["intervalSeconds"], s["initialInput"]) for s in listed] == [
                (kept["id"], 3600, {})
            ]


class TestTemporalAnswers:
    async def test_an_unknown_schedule_of_the_workflow_is_404_schedule_not_found(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(url(wf, f"sched-{wf}-nothere") + "/pause")
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "resource_not_found"
        assert error["message"] == f"Schedule not found: sched-{wf}-nothere"

    async def test_the_skips_of_a_deleted_or_unknown_schedule_are_404(
        self, platform: Platform
    ) -> None:
        # They were 200 with no skips, as if the schedule existed.
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, {"intervalSeconds": 3600}) as made:
            assert (await platform.api.get(url(wf, made["id"]) + "/skips")).status_code == 200
        for gone in (made["id"], f"sched-{wf}-nothere"):
            response = await platform.api.get(url(wf, gone) + "/skips")
            assert response.status_code == 404, response.text
            assert response.json()["error"]["message"] == f"Schedule not found: {gone}"

    async def test_skips_after_an_id_no_store_can_hold_is_400(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        async with schedule(platform, wf, {"intervalSeconds": 3600}) as made:
            skips = url(wf, made["id"]) + "/skips"
            largest = await platform.api.get(skips, params={"afterId": 10**18 - 1})
            assert largest.status_code == 200 and largest.json() == {"skips": []}
            response = await platform.api.get(skips, params={"afterId": 10**20})
            assert response.status_code == 400, response.text
            assert response.json()["error"]["details"][0]["path"] == "afterId"

    async def test_a_backwards_range_wraps_around(self, platform: Platform) -> None:
        # Temporal refuses FRI-MON; the API splits it (FRI-SAT,SUN-MON) and keeps it as given.
        wf = await platform.create(ECHO)
        response = await platform.api.post(url(wf), json={"cron": "0 9 * * FRI-MON"})
        assert response.status_code == 201, response.text
        created = response.json()
        assert created["cron"] == "0 9 * * FRI-MON"
        days = {datetime.fromisoformat(t).strftime("%a") for t in created["nextActionTimes"]}
        assert days == {"Fri", "Sat", "Sun", "Mon"}

    async def test_a_weekday_range_ending_at_seven_runs_through_sunday(
        self, platform: Platform
    ) -> None:
        # 7 is Sunday again: `0-7` fired on Sundays only (7 was read as 0, the range 0-0).
        wf = await platform.create(ECHO)
        expected = {
            "0 0 * * 0-7/2": {"Sun", "Tue", "Thu", "Sat"},
            "0 0 * * 5-7/2": {"Fri", "Sun"},
            "0 0 * * 7-2": {"Sun", "Mon", "Tue"},
        }
        for cron, days in expected.items():
            async with schedule(platform, wf, {"cron": cron}) as made:
                times = [datetime.fromisoformat(t) for t in made["nextActionTimes"]]
                assert made["cron"] == cron and len(times) >= len(days)
                assert {t.strftime("%a") for t in times} == days, (cron, times)
        async with schedule(platform, wf, {"cron": "0 0 * * 0-7"}) as made:
            times = [datetime.fromisoformat(t) for t in made["nextActionTimes"]]
            assert len(times) > 1
            assert {b - a for a, b in itertools.pairwise(times)} == {timedelta(days=1)}

    async def test_a_schedule_made_outside_trellis_is_not_listed_and_is_404(
        self, platform: Platform
    ) -> None:
        # Under the workflow's id prefix and search attribute, but starting another workflow
        # (or ours with another argument): GET and the list were a 500.
        wf = await platform.create(ECHO)
        attributes = TypedSearchAttributes(
            [SearchAttributePair(search_attributes.DEFINITION_ID, wf)]
        )
        foreign = {
            f"sched-{wf}-other": ScheduleActionStartWorkflow(
                "SomeoneElsesWorkflow", id="theirs", task_queue="theirs"
            ),
            f"sched-{wf}-otherarg": ScheduleActionStartWorkflow(
                SCHEDULE_WORKFLOW_TYPE, {"report": "weekly"}, id="theirs", task_queue="theirs"
            ),
        }
        for schedule_id, action in foreign.items():
            await platform.client.create_schedule(
                schedule_id,
                Schedule(
                    action=action,
                    spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
                    state=ScheduleState(paused=True),
                ),
                search_attributes=attributes,
            )
        try:
            async with schedule(platform, wf, {"intervalSeconds": 3600}) as ours:

                async def all_visible() -> bool:
                    query = f"TrellisDefinitionId = '{wf}'"
                    ids = {s.id async for s in await platform.client.list_schedules(query=query)}
                    return ids == {ours["id"], *foreign}

                await eventually(all_visible)
                listed = await platform.api.get(url(wf))
                assert listed.status_code == 200, listed.text
                assert [s["id"] for s in listed.json()["schedules"]] == [ours["id"]]
                for schedule_id in foreign:
                    for method, path in (
                        ("GET", ""),
                        ("PUT", ""),
                        ("POST", "/pause"),
                        ("POST", "/trigger"),
                        ("GET", "/skips"),
                        ("DELETE", ""),
                    ):
                        response = await platform.api.request(
                            method,
                            url(wf, schedule_id) + path,
                            json={"intervalSeconds": 60} if method == "PUT" else None,
                        )
                        assert response.status_code == 404, (method, path, response.text)
                        message = response.json()["error"]["message"]
                        assert message == f"Schedule not found: {schedule_id}"
                    # Left as its owner made it.
                    described = await platform.client.get_schedule_handle(schedule_id).describe()
                    assert described.schedule.state.paused and described.info.num_actions == 0
                    assert described.info.last_updated_at is None
        finally:
            for schedule_id in foreign:
                await platform.client.get_schedule_handle(schedule_id).delete()


async def logged_skips(platform: Platform, schedule_id: str) -> list[dict[str, Any]]:
    return await platform.store.list_events(skip_log_key(schedule_id), 0, 100)


async def skip_once(platform: Platform, workflow_id: str, schedule_id: str) -> None:
    """Fire the schedule of a disabled workflow (in Temporal: the API refuses it) and wait
    for its skip in the store."""
    assert (await platform.api.get(url(workflow_id, schedule_id))).status_code == 200
    await platform.client.get_schedule_handle(schedule_id).trigger()
    await eventually(lambda: logged_skips(platform, schedule_id))


class TestSkipLogs:
    """A schedule's skips go with it; they stayed in the store after every delete."""

    async def test_deleting_a_schedule_deletes_its_skips_and_its_key_made_anew_has_none(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO, enable=False)
        key = {"Idempotency-Key": "again"}
        made = (await platform.api.post(url(wf), json=DAILY, headers=key)).json()
        await skip_once(platform, wf, made["id"])
        assert (await platform.api.delete(url(wf, made["id"]))).status_code == 204
        assert await logged_skips(platform, made["id"]) == []
        # The same key makes a new schedule (a new id): it starts with no skips.
        again = (await platform.api.post(url(wf), json=DAILY, headers=key)).json()
        try:
            assert again["id"] != made["id"]
            skips = await platform.api.get(url(wf, again["id"]) + "/skips")
            assert skips.status_code == 200 and skips.json() == {"skips": []}
        finally:
            await platform.api.delete(url(wf, again["id"]))

    async def test_deleting_the_workflow_deletes_its_schedules_skips(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO, enable=False)
        made = (await platform.api.post(url(wf), json=DAILY)).json()
        await skip_once(platform, wf, made["id"])

        async def listed() -> bool:
            return bool((await platform.api.get(url(wf))).json()["schedules"])

        await eventually(listed)  # the delete finds schedules through visibility
        assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
        assert await logged_skips(platform, made["id"]) == []

    async def test_a_schedule_deleting_itself_after_its_workflow_deletes_its_skips(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO, enable=False)
        made = (await platform.api.post(url(wf), json=DAILY)).json()
        await skip_once(platform, wf, made["id"])
        # As when the workflow's delete could not list it (Temporal down, visibility lag).
        assert await platform.store.delete_workflow(wf)
        # Temporal names a firing's run by its second: a second trigger within the first's
        # second starts nothing (one firing), and nothing would delete the schedule.
        await asyncio.sleep(1.1)
        await platform.client.get_schedule_handle(made["id"]).trigger()

        async def gone() -> bool:
            try:
                await platform.client.get_schedule_handle(made["id"]).describe()
            except RPCError as exc:
                return exc.status == RPCStatusCode.NOT_FOUND
            return False

        async def no_skips() -> bool:
            return await logged_skips(platform, made["id"]) == []

        await eventually(gone)
        await eventually(no_skips)  # the activity deletes them after the schedule


class TestOrphanSchedules:
    async def test_a_paused_schedule_its_deleted_workflow_left_is_deleted_on_a_second_look(
        self, platform: Platform
    ) -> None:
        # A workflow deleted while Temporal was down left its paused schedule in Temporal
        # for good (a paused one never fires, so it never deleted itself).
        gone_wf, kept_wf = await platform.create(ECHO, enable=False), await platform.create(ECHO)
        paused = {**DAILY, "paused": True}
        left = (await platform.api.post(url(gone_wf), json=paused)).json()
        active = (await platform.api.post(url(gone_wf), json=DAILY)).json()
        kept = (await platform.api.post(url(kept_wf), json=paused)).json()
        await skip_once(platform, gone_wf, left["id"])
        # Ours in form, but another deployment's (another task queue) on the same namespace.
        theirs = f"sched-{gone_wf}-theirs"
        trigger = ScheduleTriggerInput(schedule_id=theirs, workflow_id=gone_wf)
        await platform.client.create_schedule(
            theirs,
            Schedule(
                action=ScheduleActionStartWorkflow(
                    SCHEDULE_WORKFLOW_TYPE, trigger, id=f"{theirs}-run", task_queue="elsewhere"
                ),
                spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
                state=ScheduleState(paused=True),
            ),
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(search_attributes.DEFINITION_ID, gone_wf)]
            ),
        )
        assert await platform.store.delete_workflow(gone_wf)  # as a delete with Temporal down
        orphans = OrphanSchedules(
            platform.client, platform.store, platform.task_queue, timedelta(seconds=0.5)
        )

        async def seen() -> bool:  # once visibility lists it: seen, not deleted at first sight
            await orphans.sweep()
            return left["id"] in orphans._seen

        await eventually(seen)
        await asyncio.sleep(0.6)
        assert await orphans.sweep() == [left["id"]]  # still orphaned a while later
        with pytest.raises(RPCError) as missing:
            await platform.client.get_schedule_handle(left["id"]).describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND
        assert await logged_skips(platform, left["id"]) == []
        # The active one is left to delete itself when it fires; another's stays; a
        # schedule of a workflow the store has stays.
        for schedule_id in (active["id"], theirs):
            assert (await platform.client.get_schedule_handle(schedule_id).describe()).id
            await platform.client.get_schedule_handle(schedule_id).delete()
        assert (await platform.api.get(url(kept_wf, kept["id"]))).status_code == 200
        assert (await platform.api.delete(url(kept_wf, kept["id"]))).status_code == 204

    async def test_a_store_without_workflows_deletes_nothing(
        self, platform: Platform, tmp_path: Path
    ) -> None:
        # A worker started against the wrong store (a new data directory, a mistyped
        # database) would otherwise find every schedule orphaned.
        wf = await platform.create(ECHO)
        made = (await platform.api.post(url(wf), json={**DAILY, "paused": True})).json()
        empty = SqliteStore(tmp_path / "empty.db")
        await empty.connect()
        try:
            orphans = OrphanSchedules(platform.client, empty, platform.task_queue, timedelta(0))
            for _ in range(2):
                assert await orphans.sweep() == []
        finally:
            await empty.close()
        assert (await platform.api.get(url(wf, made["id"]))).status_code == 200
        assert (await platform.api.delete(url(wf, made["id"]))).status_code == 204


class TestCronCheckProbes:
    async def test_a_probe_left_by_a_stopped_api_is_deleted_and_one_in_use_is_kept(
        self, platform: Platform
    ) -> None:
        # An API that died between making and deleting a probe left it in Temporal for ever:
        # paused, listed by no workflow, in the Web UI.
        def probe(probe_id: str) -> Schedule:
            return Schedule(
                action=ScheduleActionStartWorkflow(
                    PROBE_WORKFLOW_TYPE, id=f"{probe_id}-run", task_queue=platform.task_queue
                ),
                spec=ScheduleSpec(cron_expressions=["0 0 31 2 *"]),
                state=ScheduleState(paused=True),
            )

        left, in_use = (f"{PROBE_PREFIX}{uuid.uuid4().hex}" for _ in range(2))
        await platform.client.create_schedule(left, probe(left))
        await asyncio.sleep(1.5)
        await platform.client.create_schedule(in_use, probe(in_use))
        reconciler = Reconciler(
            platform.client,
            platform.store,
            task_queue=platform.task_queue,
            probe_max_age=timedelta(seconds=1),
        )

        async def exists(schedule_id: str) -> bool:
            try:
                await platform.client.get_schedule_handle(schedule_id).describe()
            except RPCError as exc:
                assert exc.status == RPCStatusCode.NOT_FOUND
                return False
            return True

        async def left_gone() -> bool:
            return not await exists(left)

        sweeping = asyncio.create_task(reconciler.run_forever())
        try:
            await eventually(left_gone)
            assert await exists(in_use)  # younger than a check may take: its check's own
        finally:
            sweeping.cancel()
            await platform.client.get_schedule_handle(in_use).delete()

    @pytest.mark.parametrize("deleted", ["workflow", "schedule"])
    async def test_a_skip_written_by_a_firing_in_progress_at_a_delete_goes_too(
        self, platform: Platform, deleted: str
    ) -> None:
        # The firing read the (disabled) workflow, the delete ran and swept the skips, and
        # the firing's skip was written after: it stayed in the store for ever.
        wf = await platform.create(ECHO, enable=False)
        made = (await platform.api.post(url(wf), json=DAILY)).json()

        async def listed() -> bool:
            return bool((await platform.api.get(url(wf))).json()["schedules"])

        await eventually(listed)  # so the workflow's delete deletes it
        target = f"/api/v1/workflows/{wf}" if deleted == "workflow" else url(wf, made["id"])

        class DeletedAfterTheRead:
            """The store, but the delete (over HTTP) runs just after the firing's read."""

            def __init__(self, store: Store) -> None:
                self._store, self._reads = store, 0

            def __getattr__(self, name: str) -> Any:
                return getattr(self._store, name)

            async def get_workflow(self, workflow_id: str) -> WorkflowRecord | None:
                found = await self._store.get_workflow(workflow_id)
                self._reads += 1
                if self._reads == 1:
                    response = await platform.api.delete(target)
                    assert response.status_code == 204, response.text
                return found

        activities = SchedulingActivities(
            cast(Store, DeletedAfterTheRead(platform.store)), platform.client
        )
        request = ScheduledRunRequest(
            run_id=f"run-{uuid.uuid4()}",
            trigger=ScheduleTriggerInput(schedule_id=made["id"], workflow_id=wf),
        )
        result = await ActivityEnvironment().run(activities.start_scheduled_run, request)
        assert result.skipped_reason is not None
        assert await logged_skips(platform, made["id"]) == []
