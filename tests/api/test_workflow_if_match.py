"""A workflow's ETag and a PUT under If-Match: a save made since the read is not overwritten
(two people editing one workflow in a builder)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from activities.store.access import Grant
from activities.store.base import Store
from tests.api.helpers import API, assert_error
from tests.builders import step, workflow

Create = Callable[..., Any]


def url(wf: dict[str, Any]) -> str:
    return f"{API}/workflows/{wf['id']}"


async def _versions(client: httpx.AsyncClient, wf: dict[str, Any]) -> list[int]:
    listed = (await client.get(f"{url(wf)}/versions")).json()
    return [v["version"] for v in listed["versions"]]


async def test_every_answer_showing_a_workflow_carries_its_strong_etag(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post(f"{API}/workflows", json=workflow("tagged"))
    assert created.status_code == 201, created.text
    wf = created.json()
    read = await client.get(url(wf))
    tag = read.headers["etag"]
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/")
    assert created.headers["etag"] == tag
    assert (await client.get(url(wf))).headers["etag"] == tag
    toggled = await client.post(f"{url(wf)}/toggle", json={"enabled": True})
    assert toggled.status_code == 200, toggled.text
    assert toggled.headers["etag"] != tag
    assert (await client.get(url(wf))).headers["etag"] == toggled.headers["etag"]


async def test_a_put_with_the_current_etag_is_made_and_answers_the_new_one(
    client: httpx.AsyncClient, create: Create
) -> None:
    wf = await create(workflow("before"))
    tag = (await client.get(url(wf))).headers["etag"]
    response = await client.put(url(wf), json={"name": "after"}, headers={"If-Match": tag})
    assert response.status_code == 200, response.text
    assert (response.json()["name"], response.json()["version"]) == ("after", 2)
    assert response.headers["etag"] != tag
    assert (await client.get(url(wf))).headers["etag"] == response.headers["etag"]


async def test_a_put_of_the_same_body_under_the_current_etag_keeps_it(
    client: httpx.AsyncClient, create: Create
) -> None:
    wf = await create(workflow("same"))
    tag = (await client.get(url(wf))).headers["etag"]
    response = await client.put(url(wf), json={"name": "same"}, headers={"If-Match": tag})
    assert response.status_code == 200, response.text
    assert response.headers["etag"] == tag
    assert response.json() == wf


@pytest.mark.parametrize("between", ["save", "toggle"])
async def test_a_put_with_a_stale_etag_is_412_and_changes_nothing(
    client: httpx.AsyncClient, create: Create, between: str
) -> None:
    wf = await create(workflow("edited"))
    stale = (await client.get(url(wf))).headers["etag"]
    if between == "save":
        made = await client.put(url(wf), json={"description": "someone else's save"})
    else:
        made = await client.post(f"{url(wf)}/toggle", json={"enabled": True})
    assert made.status_code == 200, made.text
    before = await client.get(url(wf))
    versions = await _versions(client, wf)
    mine = {"nodes": [step("Mine", "builtin:echo")], "name": "mine"}
    for if_match in (stale, "garbage", f"W/{before.headers['etag']}", f"{stale}, {stale}"):
        refused = await client.put(url(wf), json=mine, headers={"If-Match": if_match})
        assert_error(refused, 412, "precondition_failed", wf["id"], "changed since")
    # Quoted as sent: a UTF-8 tag was read as Latin-1 ('"ã\x83\x90"').
    refused = await client.put(url(wf), json=mine, headers={"If-Match": '"バ"'.encode()})
    assert_error(refused, 412, "precondition_failed", "If-Match '\"バ\"' is not")
    after = await client.get(url(wf))
    assert after.json() == before.json()
    assert after.headers["etag"] == before.headers["etag"] != stale
    assert await _versions(client, wf) == versions


async def test_a_put_without_if_match_or_with_a_star_is_made_whatever_changed(
    client: httpx.AsyncClient, create: Create
) -> None:
    wf = await create(workflow("plain"))
    await client.put(url(wf), json={"description": "in between"})
    bare = await client.put(url(wf), json={"name": "bare"})
    assert bare.status_code == 200, bare.text
    await client.put(url(wf), json={"description": "again"})
    star = await client.put(url(wf), json={"name": "star"}, headers={"If-Match": "*"})
    assert star.status_code == 200, star.text
    assert (await client.get(url(wf))).json()["name"] == "star"


async def test_a_change_of_grants_alone_keeps_the_definitions_etag(
    client: httpx.AsyncClient, store: Store, create: Create
) -> None:
    """The grants have their own tag: a share in between is no edit of the definition."""
    wf = await create(workflow("shared"))
    tag = (await client.get(url(wf))).headers["etag"]
    ops = Grant(principal="role:ops", permissions=["VIEW"])
    assert await store.set_workflow_grants(wf["id"], [ops])
    response = await client.put(url(wf), json={"name": "still mine"}, headers={"If-Match": tag})
    assert response.status_code == 200, response.text
    kept = await store.get_workflow(wf["id"])
    assert kept is not None and kept.grants == [ops]


async def test_puts_sent_at_once_with_one_etag_make_one_save_and_the_rest_are_412(
    client: httpx.AsyncClient, create: Create
) -> None:
    """The tag is checked on the record the write is made over: of several editors that
    read the same tag, one saves and every other is told; none overwrites the winner."""
    wf = await create(workflow("raced"))
    tag = (await client.get(url(wf))).headers["etag"]
    answers = await asyncio.gather(
        *(
            client.put(url(wf), json={"name": f"editor-{i}"}, headers={"If-Match": tag})
            for i in range(8)
        )
    )
    assert sorted(a.status_code for a in answers) == [200] + [412] * 7, [a.text for a in answers]
    [made] = [a for a in answers if a.status_code == 200]
    for refused in (a for a in answers if a.status_code == 412):
        assert_error(refused, 412, "precondition_failed", wf["id"], "changed since")
    now = await client.get(url(wf))
    assert now.json() == made.json()
    assert now.headers["etag"] == made.headers["etag"]
    assert await _versions(client, wf) == [1, 2]
