"""Per-workflow ACLs over HTTP: the creator owns; grants to users and roles; no VIEW is 404."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.auth.caller import READ, SHARE, WRITE
from tests.api.helpers import API, assert_error
from tests.support.identity import as_user

ALICE = as_user("alice")
BOB = as_user("bob")
OPS_MEMBER = as_user("dana", roles=["ops"])
ONE_STEP = [{"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo"}]


async def create(api: httpx.AsyncClient, headers: dict[str, str], name: str = "wf") -> str:
    response = await api.post(
        f"{API}/workflows", json={"name": name, "nodes": ONE_STEP}, headers=headers
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def share(api: httpx.AsyncClient, wf: str, grants: list[dict[str, Any]]) -> httpx.Response:
    return await api.put(
        f"{API}/workflows/{wf}/permissions", json={"grants": grants}, headers=ALICE
    )


async def test_the_creator_owns_the_workflow(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    response = await api.get(f"{API}/workflows/{wf}/permissions", headers=ALICE)
    assert response.status_code == 200, response.text
    assert response.json() == {"workflowId": wf, "owner": "user:alice", "grants": []}


async def test_without_view_a_workflow_is_404_like_an_unknown_one(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    hidden = await api.get(f"{API}/workflows/{wf}", headers=BOB)
    unknown = await api.get(f"{API}/workflows/no-such-workflow", headers=BOB)
    assert_error(hidden, 404, "resource_not_found", wf)
    assert_error(unknown, 404, "resource_not_found")
    for path in ("versions", "graph", "runs", "schedules", "permissions"):
        response = await api.get(f"{API}/workflows/{wf}/{path}", headers=BOB)
        assert_error(response, 404, "resource_not_found")
    response = await api.delete(f"{API}/workflows/{wf}", headers=BOB)
    assert_error(response, 404, "resource_not_found")


async def test_lists_count_only_visible_workflows(api: httpx.AsyncClient) -> None:
    await create(api, ALICE, "alice-1")
    await create(api, ALICE, "alice-2")
    bobs = await create(api, BOB, "bob-1")
    page = (await api.get(f"{API}/workflows", headers=BOB)).json()
    assert [w["id"] for w in page["workflows"]] == [bobs]
    assert page["pagination"]["total"] == 1


async def test_a_view_grant_shows_it_but_edit_and_delete_are_403(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    assert (await share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])).is_success
    assert (await api.get(f"{API}/workflows/{wf}", headers=BOB)).status_code == 200
    assert (await api.get(f"{API}/workflows", headers=BOB)).json()["pagination"]["total"] == 1
    update = await api.put(f"{API}/workflows/{wf}", json={"name": "mine now"}, headers=BOB)
    assert_error(update, 403, "forbidden", "EDIT")
    delete = await api.delete(f"{API}/workflows/{wf}", headers=BOB)
    assert_error(delete, 403, "forbidden", "DELETE")
    reshare = await api.put(f"{API}/workflows/{wf}/permissions", json={"grants": []}, headers=BOB)
    assert_error(reshare, 403, "forbidden", "SHARE")
    assert (await api.get(f"{API}/workflows/{wf}", headers=ALICE)).json()["name"] == "wf"


async def test_a_role_grant_applies_to_every_member(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    granted = await share(api, wf, [{"principal": "role:ops", "permissions": ["EDIT"]}])
    assert granted.json()["grants"] == [{"principal": "role:ops", "permissions": ["VIEW", "EDIT"]}]
    response = await api.put(f"{API}/workflows/{wf}", json={"name": "ops"}, headers=OPS_MEMBER)
    assert response.status_code == 200, response.text
    assert (await api.get(f"{API}/workflows/{wf}", headers=BOB)).status_code == 404


async def test_put_replaces_the_grants(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    await share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])
    await share(api, wf, [{"principal": "role:ops", "permissions": ["VIEW"]}])
    assert (await api.get(f"{API}/workflows/{wf}", headers=BOB)).status_code == 404
    assert (await api.get(f"{API}/workflows/{wf}", headers=OPS_MEMBER)).status_code == 200


async def test_share_permission_lets_another_user_change_grants(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    await share(api, wf, [{"principal": "user:bob", "permissions": ["SHARE"]}])
    response = await api.put(
        f"{API}/workflows/{wf}/permissions",
        json={"grants": [{"principal": "user:bob", "permissions": ["SHARE"]},
                         {"principal": "user:erin", "permissions": ["VIEW"]}]},
        headers=BOB,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    assert (await api.get(f"{API}/workflows/{wf}", headers=as_user("erin"))).status_code == 200


async def test_a_grant_adds_only_permissions_its_granter_holds(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    start = [
        {"principal": "user:bob", "permissions": ["VIEW", "SHARE"]},
        {"principal": "role:ops", "permissions": ["VIEW", "EDIT"]},
    ]
    await share(api, wf, start)
    as_bob = f"{API}/workflows/{wf}/permissions"
    escalations: list[tuple[list[dict[str, Any]], str]] = [
        ([{"principal": "user:bob", "permissions": ["SHARE", "EDIT"]}, start[1]], "EDIT"),
        ([start[0], start[1], {"principal": "user:erin", "permissions": ["DELETE"]}], "DELETE"),
        ([start[0], {"principal": "role:ops", "permissions": ["EDIT", "DELETE"]}], "DELETE"),
    ]
    for grants, permission in escalations:
        response = await api.put(as_bob, json={"grants": grants}, headers=BOB)
        assert_error(response, 403, "forbidden", permission)
    assert (await api.get(as_bob, headers=ALICE)).json()["grants"] == start
    assert_error(
        await api.put(f"{API}/workflows/{wf}", json={"name": "bob's"}, headers=BOB),
        403,
        "forbidden",
        "EDIT",
    )
    # What bob holds he may pass on; what others hold already stays; removing is allowed.
    passed_on = [start[0], {"principal": "user:erin", "permissions": ["VIEW", "SHARE"]}]
    response = await api.put(as_bob, json={"grants": [*passed_on, start[1]]}, headers=BOB)
    assert response.status_code == 200, response.text
    response = await api.put(as_bob, json={"grants": passed_on}, headers=BOB)
    assert response.status_code == 200, response.text
    assert (await api.get(as_bob, headers=ALICE)).json()["grants"] == passed_on


async def test_bad_grants_are_400_and_change_nothing(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    await share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])
    bad_bodies: list[list[dict[str, Any]]] = [
        [{"principal": "bob", "permissions": ["VIEW"]}],
        [{"principal": "group:x", "permissions": ["VIEW"]}],
        [{"principal": "user:bob", "permissions": ["ADMIN"]}],
        [{"principal": "user:bob", "permissions": []}],
        [{"principal": "user:bob", "permissions": ["VIEW"]}] * 2,
        [{"principal": "user:alice", "permissions": ["VIEW"]}],
    ]
    for grants in bad_bodies:
        assert_error(await share(api, wf, grants), 400, "invalid_request")
    response = await api.get(f"{API}/workflows/{wf}/permissions", headers=ALICE)
    assert response.json()["grants"] == [{"principal": "user:bob", "permissions": ["VIEW"]}]


async def test_permissions_need_the_share_scope(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    headers = as_user("alice", [READ, WRITE])
    response = await api.get(f"{API}/workflows/{wf}/permissions", headers=headers)
    assert_error(response, 403, "forbidden", SHARE)


async def test_the_owner_keeps_every_permission_whatever_the_grants(
    api: httpx.AsyncClient,
) -> None:
    wf = await create(api, ALICE)
    await share(api, wf, [{"principal": "role:ops", "permissions": ["VIEW"]}])
    response = await api.put(f"{API}/workflows/{wf}", json={"name": "still mine"}, headers=ALICE)
    assert response.status_code == 200
    assert (await api.delete(f"{API}/workflows/{wf}", headers=ALICE)).status_code == 204


async def test_permissions_carry_an_etag_that_a_put_checks(api: httpx.AsyncClient) -> None:
    wf = await create(api, ALICE)
    path = f"{API}/workflows/{wf}/permissions"
    read = await api.get(path, headers=ALICE)
    tag = read.headers["etag"]
    assert tag.startswith('"') and (await api.get(path, headers=ALICE)).headers["etag"] == tag
    bob = {"grants": [{"principal": "user:bob", "permissions": ["VIEW"]}]}
    made = await api.put(path, json=bob, headers={**ALICE, "If-Match": tag})
    assert made.status_code == 200, made.text
    assert made.headers["etag"] != tag
    assert (await api.get(path, headers=ALICE)).headers["etag"] == made.headers["etag"]


async def test_a_permissions_put_with_a_stale_etag_is_412_and_changes_nothing(
    api: httpx.AsyncClient,
) -> None:
    wf = await create(api, ALICE)
    path = f"{API}/workflows/{wf}/permissions"
    stale = (await api.get(path, headers=ALICE)).headers["etag"]
    assert (await share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])).is_success
    before = await api.get(path, headers=ALICE)
    ops = {"grants": [{"principal": "role:ops", "permissions": ["EDIT"]}]}
    for if_match in (stale, "garbage", f"W/{before.headers['etag']}"):
        refused = await api.put(path, json=ops, headers={**ALICE, "If-Match": if_match})
        assert_error(refused, 412, "precondition_failed", wf, "changed since")
    after = await api.get(path, headers=ALICE)
    assert after.json() == before.json()
    assert after.headers["etag"] == before.headers["etag"]
    assert (await api.put(path, json=ops, headers=ALICE)).status_code == 200


async def test_puts_sent_at_once_with_one_etag_make_one_change_and_the_rest_are_412(
    api: httpx.AsyncClient,
) -> None:
    """If-Match is checked and the grants written in one step: of several writers that
    read the same tag, one wins and every other is told, none overwrites the winner."""
    wf = await create(api, ALICE)
    path = f"{API}/workflows/{wf}/permissions"
    tag = (await api.get(path, headers=ALICE)).headers["etag"]
    puts = [
        api.put(
            path,
            json={"grants": [{"principal": f"user:writer-{i}", "permissions": ["VIEW"]}]},
            headers={**ALICE, "If-Match": tag},
        )
        for i in range(8)
    ]
    answers = await asyncio.gather(*puts)
    assert sorted(a.status_code for a in answers) == [200] + [412] * 7
    [made] = [a for a in answers if a.status_code == 200]
    for refused in (a for a in answers if a.status_code == 412):
        assert_error(refused, 412, "precondition_failed", wf, "changed since")
    now = await api.get(path, headers=ALICE)
    assert now.json() == made.json()
    assert now.headers["etag"] == made.headers["etag"]
