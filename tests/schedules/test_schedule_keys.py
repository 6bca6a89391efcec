"""A schedule create under an `Idempotency-Key`: a repeat answers the first schedule."""

from __future__ import annotations

import asyncio

from tests.schedules.test_schedules import DAILY, ECHO, url
from tests.support.platform import Platform
from tests.support.polling import eventually

KEY = {"Idempotency-Key": "nightly-report"}


async def visible_ids(platform: Platform, workflow_id: str) -> set[str]:
    query = f"TrellisDefinitionId = '{workflow_id}'"
    return {s.id async for s in await platform.client.list_schedules(query=query)}


async def test_a_repeat_with_the_key_answers_the_first_schedule_and_creates_nothing(
    platform: Platform,
) -> None:
    # Without a key, a create whose answer was lost and was sent again made two schedules.
    wf = await platform.create(ECHO)
    first = await platform.api.post(url(wf), json=DAILY, headers=KEY)
    assert first.status_code == 201, first.text
    made = first.json()
    try:
        written_out = {**DAILY, "overlapPolicy": "skip", "paused": False}
        for body in (DAILY, written_out):
            again = await platform.api.post(url(wf), json=body, headers=KEY)
            assert again.status_code == 201, again.text
            assert again.json() == made
        other = await platform.api.post(url(wf), json=DAILY)
        assert other.json()["id"] != made["id"]
        await platform.api.delete(url(wf, other.json()["id"]))
        await eventually(lambda: visible_ids(platform, wf))
        assert await visible_ids(platform, wf) <= {made["id"], other.json()["id"]}
    finally:
        await platform.api.delete(url(wf, made["id"]))


async def test_concurrent_first_uses_of_a_key_make_one_schedule(platform: Platform) -> None:
    wf = await platform.create(ECHO)
    answers = await asyncio.gather(
        *(platform.api.post(url(wf), json=DAILY, headers=KEY) for _ in range(4))
    )
    assert [a.status_code for a in answers] == [201] * 4, [a.text for a in answers]
    [schedule_id] = {a.json()["id"] for a in answers}
    await platform.api.delete(url(wf, schedule_id))


async def test_the_key_with_another_body_is_409_naming_it_and_changes_nothing(
    platform: Platform,
) -> None:
    wf = await platform.create(ECHO)
    made = (await platform.api.post(url(wf), json=DAILY, headers=KEY)).json()
    try:
        for body, differs in (
            ({**DAILY, "cron": "0 10 * * 1-5"}, "cron differs"),
            ({**DAILY, "initialInput": {"x": 2}, "paused": True}, "initialInput, paused differ"),
        ):
            response = await platform.api.post(url(wf), json=body, headers=KEY)
            assert response.status_code == 409, response.text
            error = response.json()["error"]
            assert error["code"] == "conflict"
            assert error["message"] == (
                f"Idempotency-Key was first used for schedule {made['id']} with a different "
                f"request ({differs}): repeat that request unchanged, or use a new key "
                "for a new schedule"
            )
        assert (await platform.api.get(url(wf, made["id"]))).json() == made
    finally:
        await platform.api.delete(url(wf, made["id"]))


async def test_a_key_is_per_workflow(platform: Platform) -> None:
    one, two = await platform.create(ECHO), await platform.create(ECHO)
    made = [(await platform.api.post(url(wf), json=DAILY, headers=KEY)).json() for wf in (one, two)]
    assert made[0]["id"].startswith(f"sched-{one}-") and made[1]["id"].startswith(f"sched-{two}-")
    for wf, schedule in zip((one, two), made, strict=True):
        await platform.api.delete(url(wf, schedule["id"]))


async def test_a_key_whose_schedule_was_deleted_makes_a_new_schedule_under_a_new_id(
    platform: Platform,
) -> None:
    # It was made anew under the same id, so `runs?scheduleId=` listed the deleted
    # schedule's runs with the new one's (an audit: 67 old runs under a new schedule).
    wf = await platform.create(ECHO)
    made = (await platform.api.post(url(wf), json=DAILY, headers=KEY)).json()
    fired = await platform.api.post(url(wf, made["id"]) + "/trigger")
    assert fired.status_code == 202, fired.text
    runs = f"/api/v1/workflows/{wf}/runs"

    async def listed(schedule_id: str) -> list[str]:
        answer = await platform.api.get(runs, params={"scheduleId": schedule_id})
        return [r["id"] for r in answer.json()["runs"]]

    [old_run] = await eventually(lambda: listed(made["id"]))
    assert (await platform.api.delete(url(wf, made["id"]))).status_code == 204
    ids = [made["id"]]
    for _ in range(2):  # made anew, deleted and made anew once more: a new id each time
        again = await platform.api.post(url(wf), json=DAILY, headers=KEY)
        assert again.status_code == 201, again.text
        assert again.json()["id"] not in ids and again.json()["id"].startswith(f"sched-{wf}-")
        assert again.json()["createdAt"] > made["createdAt"]
        assert await listed(again.json()["id"]) == []
        # A repeat, the schedule still there (its answer lost), still answers it.
        repeat = await platform.api.post(url(wf), json=DAILY, headers=KEY)
        assert repeat.status_code == 201 and repeat.json() == again.json()
        ids.append(again.json()["id"])
        assert (await platform.api.delete(url(wf, again.json()["id"]))).status_code == 204
    # The deleted schedule's run still names it.
    assert await listed(made["id"]) == [old_run]
    # A schedule made without a key leaves no mark behind.
    plain = (await platform.api.post(url(wf), json=DAILY)).json()
    assert (await platform.api.delete(url(wf, plain["id"]))).status_code == 204
    assert await platform.store.last_event_id(f"schedule-deleted:{plain['id']}") == 0


async def test_numbers_equal_in_value_are_the_same_request_and_true_is_not_1(
    platform: Platform,
) -> None:
    # JSON has one number type: 1.0 (as some client libraries send 1) was a 409.
    wf = await platform.create(ECHO)
    body = {**DAILY, "initialInput": {"n": 1, "rate": 2.5}}
    made = (await platform.api.post(url(wf), json=body, headers=KEY)).json()
    try:
        again = await platform.api.post(
            url(wf), json={**body, "initialInput": {"n": 1.0, "rate": 2.5}}, headers=KEY
        )
        assert again.status_code == 201, again.text
        assert again.json()["id"] == made["id"]
        for other in ({"n": True, "rate": 2.5}, {"n": 1, "rate": 2}):
            response = await platform.api.post(
                url(wf), json={**body, "initialInput": other}, headers=KEY
            )
            assert response.status_code == 409, (other, response.text)
            assert "(initialInput differs)" in response.json()["error"]["message"]
    finally:
        await platform.api.delete(url(wf, made["id"]))
