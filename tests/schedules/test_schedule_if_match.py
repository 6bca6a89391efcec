"""A schedule's ETag and a PUT under If-Match: a change made since the read is not overwritten."""

from __future__ import annotations

import asyncio

import pytest

from tests.api.helpers import assert_error
from tests.schedules.test_schedules import DAILY, ECHO, schedule, url
from tests.support.platform import Platform
from tests.support.polling import eventually

HOURLY = {"intervalSeconds": 3600, "initialInput": {"x": 2}}


async def test_get_answers_a_strong_etag(platform: Platform) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        first = await platform.api.get(url(wf, created["id"]))
        again = await platform.api.get(url(wf, created["id"]))
        tag = first.headers["etag"]
        assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/")
        assert again.headers["etag"] == tag


async def test_a_put_with_the_current_etag_is_made_and_answers_the_new_one(
    platform: Platform,
) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        tag = (await platform.api.get(url(wf, created["id"]))).headers["etag"]
        response = await platform.api.put(
            url(wf, created["id"]), json=HOURLY, headers={"If-Match": tag}
        )
        assert response.status_code == 200, response.text
        assert response.json()["intervalSeconds"] == 3600
        new_tag = response.headers["etag"]
        assert new_tag != tag
        assert (await platform.api.get(url(wf, created["id"]))).headers["etag"] == new_tag


@pytest.mark.parametrize("change", ["put", "pause"])
async def test_a_put_with_a_stale_etag_is_412_and_changes_nothing(
    platform: Platform, change: str
) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        path = url(wf, created["id"])
        stale = (await platform.api.get(path)).headers["etag"]
        if change == "put":
            between = await platform.api.put(path, json={**DAILY, "initialInput": {"x": 9}})
        else:
            between = await platform.api.post(path + "/pause")
        assert between.status_code == 200, between.text
        before = await platform.api.get(path)
        handle = platform.client.get_schedule_handle(created["id"])
        in_temporal = (await handle.describe()).schedule

        response = await platform.api.put(path, json=HOURLY, headers={"If-Match": stale})

        assert_error(response, 412, "precondition_failed", created["id"], "changed since")
        after = await platform.api.get(path)
        assert after.json() == before.json()
        assert after.headers["etag"] == before.headers["etag"] != stale
        now = (await handle.describe()).schedule
        assert (now.spec, now.policy, now.state) == (
            in_temporal.spec,
            in_temporal.policy,
            in_temporal.state,
        )
        assert now.action == in_temporal.action


async def test_a_put_without_if_match_overwrites_as_before(platform: Platform) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        await platform.api.post(url(wf, created["id"]) + "/pause")
        response = await platform.api.put(url(wf, created["id"]), json=HOURLY)
        assert response.status_code == 200, response.text
        assert response.json()["intervalSeconds"] == 3600 and response.json()["paused"] is False


@pytest.mark.parametrize("if_match", ["not-a-tag", '"deadbeef"', "", "W/{tag}"])
async def test_a_malformed_or_weak_if_match_is_412(platform: Platform, if_match: str) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        tag = (await platform.api.get(url(wf, created["id"]))).headers["etag"]
        response = await platform.api.put(
            url(wf, created["id"]), json=HOURLY, headers={"If-Match": if_match.format(tag=tag)}
        )
        assert_error(response, 412, "precondition_failed")
        assert (await platform.api.get(url(wf, created["id"]))).json()["cron"] == DAILY["cron"]


async def test_if_match_star_or_a_list_naming_the_tag_is_made(platform: Platform) -> None:
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        path = url(wf, created["id"])
        star = await platform.api.put(path, json=HOURLY, headers={"If-Match": "*"})
        assert star.status_code == 200, star.text
        tag = star.headers["etag"]
        listed = await platform.api.put(path, json=DAILY, headers={"If-Match": f'"x", {tag}'})
        assert listed.status_code == 200, listed.text
        assert listed.json()["cron"] == DAILY["cron"]


async def test_a_firing_leaves_the_etag_as_it_was(platform: Platform) -> None:
    # numActions and the firing times are not in the tag: a schedule firing every minute
    # would otherwise refuse every read-change-write.
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        path = url(wf, created["id"])
        tag = (await platform.api.get(path)).headers["etag"]
        assert (await platform.api.post(path + "/trigger")).status_code == 202

        async def fired() -> int:
            return int((await platform.api.get(path)).json()["numActions"])

        assert await eventually(fired) >= 1
        assert (await platform.api.get(path)).headers["etag"] == tag


async def test_puts_sent_at_once_with_one_etag_make_one_change_and_the_rest_are_412(
    platform: Platform,
) -> None:
    """Each update goes to Temporal with the conflict token of the description its tag was
    checked on: Temporal drops all but the first, and each writer whose update was dropped
    is told so (two to four of six were made before, the last write winning)."""
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        path = url(wf, created["id"])
        tag = (await platform.api.get(path)).headers["etag"]
        puts = [
            platform.api.put(
                path, json={**HOURLY, "initialInput": {"writer": i}}, headers={"If-Match": tag}
            )
            for i in range(6)
        ]
        answers = await asyncio.gather(*puts)
        assert sorted(a.status_code for a in answers) == [200] + [412] * 5, [
            a.text for a in answers
        ]
        [made] = [a for a in answers if a.status_code == 200]
        for refused in (a for a in answers if a.status_code == 412):
            assert_error(refused, 412, "precondition_failed", created["id"], "changed since")
        now = await platform.api.get(path)
        assert now.json()["initialInput"] == made.json()["initialInput"]
        assert now.headers["etag"] == made.headers["etag"]


async def test_a_put_under_a_tag_made_stale_by_a_pause_in_between_is_412(
    platform: Platform,
) -> None:
    """A pause after the read makes the tag stale, and the PUT changes nothing, the pause
    included (a PUT without If-Match would unpause it)."""
    wf = await platform.create(ECHO)
    async with schedule(platform, wf, DAILY) as created:
        path = url(wf, created["id"])
        tag = (await platform.api.get(path)).headers["etag"]
        assert (await platform.api.post(path + "/pause")).status_code == 200
        response = await platform.api.put(path, json=HOURLY, headers={"If-Match": tag})
        assert_error(response, 412, "precondition_failed", created["id"], "changed since")
        now = (await platform.api.get(path)).json()
        assert (now["paused"], now["cron"], now["intervalSeconds"]) == (True, DAILY["cron"], None)
