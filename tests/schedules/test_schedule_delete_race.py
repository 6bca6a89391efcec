"""A schedule created while its workflow is deleted is not left in Temporal (found by an
audit: a create and a workflow's delete at the same moment answered 201 and 204 in 3 of
12 trials, and the schedule stayed, 404 on every path, until its next firing). Each test
holds one side at one point of the race, through the Temporal client the API uses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from temporalio.client import ScheduleHandle, ScheduleListDescription
from temporalio.service import RPCError, RPCStatusCode

from app.services.schedule_notes import notes_log
from tests.api.helpers import assert_error
from tests.support.platform import Platform

ECHO = {"nodes": [{"id": "a", "name": "a", "nodeType": "step", "executorKey": "builtin:echo"}]}
YEARLY = {"cron": "0 0 1 1 *"}


def url(workflow_id: str) -> str:
    return f"/api/v1/workflows/{workflow_id}/schedules"


async def assert_gone(platform: Platform, schedule_id: str) -> None:
    with pytest.raises(RPCError) as gone:
        await platform.client.get_schedule_handle(schedule_id).describe()
    assert gone.value.status == RPCStatusCode.NOT_FOUND


async def create_around(
    platform: Platform,
    monkeypatch: pytest.MonkeyPatch,
    workflow_id: str,
    meanwhile: Callable[[], Awaitable[httpx.Response]],
    *,
    made: bool,
) -> tuple[httpx.Response, httpx.Response, str]:
    """A create of a yearly schedule held just before (`made` False) or just after its
    schedule is made in Temporal while `meanwhile` runs to its end; both answers, and the
    schedule's id."""
    create_schedule = platform.client.create_schedule
    reached, go = asyncio.Event(), asyncio.Event()
    ids: list[str] = []

    async def held(schedule_id: str, *args: Any, **kwargs: Any) -> ScheduleHandle:
        if not schedule_id.startswith(f"sched-{workflow_id}-"):
            return await create_schedule(schedule_id, *args, **kwargs)  # a cron's check
        ids.append(schedule_id)
        if not made:
            reached.set()
            await go.wait()
        handle = await create_schedule(schedule_id, *args, **kwargs)
        if made:
            reached.set()
            await go.wait()
        return handle

    monkeypatch.setattr(platform.client, "create_schedule", held)
    create = asyncio.create_task(platform.api.post(url(workflow_id), json=YEARLY))
    await reached.wait()
    other = await meanwhile()
    go.set()
    [schedule_id] = ids
    return await create, other, schedule_id


class TestCreateRacingTheWorkflowsDelete:
    # Made in Temporal after the whole delete ran (`made=False`), or just before it.
    @pytest.mark.parametrize("made", [False, True], ids=["made-after", "made-before"])
    async def test_a_schedule_made_beside_the_delete_is_deleted_and_the_create_is_404(
        self, platform: Platform, monkeypatch: pytest.MonkeyPatch, made: bool
    ) -> None:
        wf = await platform.create(ECHO)

        async def delete() -> httpx.Response:
            return await platform.api.delete(f"/api/v1/workflows/{wf}")

        created, deleted, schedule_id = await create_around(
            platform, monkeypatch, wf, delete, made=made
        )
        assert deleted.status_code == 204
        assert_error(created, 404, "resource_not_found", f"Workflow {wf!r} not found")
        await assert_gone(platform, schedule_id)

    async def test_a_schedule_the_list_does_not_show_yet_is_deleted_with_its_workflow(
        self, platform: Platform, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The create answered 201 a moment before the delete, whose list of the workflow's
        # schedules (Temporal's visibility) does not show the new one yet.
        wf = await platform.create(ECHO)
        created = await platform.api.post(url(wf), json=YEARLY)
        assert created.status_code == 201, created.text

        async def not_listed_yet(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            async def nothing() -> AsyncIterator[ScheduleListDescription]:
                for listed in ():
                    yield listed

            return nothing()

        monkeypatch.setattr(platform.client, "list_schedules", not_listed_yet)
        assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
        await assert_gone(platform, created.json()["id"])
        assert await platform.store.last_event_id(notes_log(wf)) == 0  # its notes go too
