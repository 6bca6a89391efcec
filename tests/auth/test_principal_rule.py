"""One rule for a principal's name (docs/security.md, "Principals") on every path: a token's
`sub` (401), a grant (400), an approver (400); what was stored before it was this strict
still loads and runs."""

from __future__ import annotations

from typing import Any

import httpx

from activities.store.access import Grant
from app.auth.caller import CONTROL, READ
from tests.api.helpers import API, assert_error
from tests.builders import echo
from tests.hitl.helpers import wait_for_gate
from tests.support.identity import as_user, bearer, token
from tests.support.platform import Platform

# One of each kind the rule refuses: whitespace Python's `\s` takes but Rust's or ECMA's
# does not (and back), controls (C0, DEL, C1), format characters that hide or reorder.
REFUSED = {
    "\x1c": "whitespace (U+001C)",
    "\x85": "whitespace (U+0085)",
    "\xa0": "whitespace (U+00A0)",
    "\u2003": "whitespace (U+2003)",
    "\u2028": "whitespace (U+2028)",
    "\u3000": "whitespace (U+3000)",
    "\x00": "a control character (U+0000)",
    "\x1b": "a control character (U+001B)",
    "\x7f": "a control character (U+007F)",
    "\x9f": "a control character (U+009F)",
    "\u202e": "a format character (U+202E)",
    "\u2066": "a format character (U+2066)",
    "\u200e": "a format character (U+200E)",
    "\u200b": "a format character (U+200B)",
    "\u2060": "a format character (U+2060)",
    "\ufeff": "a format character (U+FEFF)",
}
TOO_LONG = "x" * 201
ACCEPTED = ["zoë", "財務", "x" * 200]
ALICE = as_user("alice")
DANA_IN_FINANCE = as_user("dana", [READ, CONTROL], roles=["finance"])


def gated(approvers: list[str]) -> dict[str, Any]:
    return echo("pay", {"requiresConfirmation": True, "approvers": approvers})


async def create(api: httpx.AsyncClient, name: str, nodes: list[dict[str, Any]]) -> httpx.Response:
    return await api.post(f"{API}/workflows", json={"name": name, "nodes": nodes}, headers=ALICE)


async def test_a_sub_no_principal_could_name_is_401(api: httpx.AsyncClient) -> None:
    for char, kind in REFUSED.items():
        response = await api.get(f"{API}/workflows", headers=bearer(token(f"bob{char}")))
        assert_error(response, 401, "authentication_required", f"'sub' holds {kind}")
    # A 300-character sub created and owned workflows no grant or approver could name.
    response = await api.post(
        f"{API}/workflows",
        json={"name": "by a long sub", "nodes": [echo("a")]},
        headers=bearer(token("x" * 300)),
    )
    assert_error(
        response, 401, "authentication_required", "'sub' is 300 characters long (at most 200)"
    )
    listed = await api.get(f"{API}/workflows", headers=ALICE, params={"search": "long sub"})
    assert listed.json()["pagination"]["total"] == 0
    for sub in ACCEPTED:
        response = await api.get(f"{API}/workflows", headers=as_user(sub))
        assert response.status_code == 200, (sub, response.text)


async def test_a_grant_no_sub_could_match_is_400_and_changes_nothing(
    api: httpx.AsyncClient,
) -> None:
    created = await create(api, "shared", [echo("a")])
    url = f"{API}/workflows/{created.json()['id']}/permissions"
    kept = {"principal": "user:bob", "permissions": ["VIEW"]}
    assert (await api.put(url, json={"grants": [kept]}, headers=ALICE)).status_code == 200
    before = await api.get(url, headers=ALICE)
    for name, says in [*((f"a{c}b", f"holds {k}") for c, k in REFUSED.items()),
                       (TOO_LONG, "is 201 characters long")]:  # fmt: skip
        for kind in ("user", "role"):
            grant = {"principal": f"{kind}:{name}", "permissions": ["EDIT"]}
            response = await api.put(url, json={"grants": [kept, grant]}, headers=ALICE)
            assert_error(response, 400, "invalid_request", "grants[1].principal", says)
            assert response.json()["error"]["details"][0]["path"] == "grants[1].principal"
    # A bad body is a 400 before a stale If-Match is a 412 (schemathesis: a 412 was seen
    # as a schema-violating body accepted).
    stale = await api.put(
        url, json={"grants": [grant]}, headers={**ALICE, "If-Match": '"not-the-tag"'}
    )
    assert_error(stale, 400, "invalid_request", "grants[0].principal")
    after = await api.get(url, headers=ALICE)
    assert after.json() == before.json() and after.headers["etag"] == before.headers["etag"]
    for name in ACCEPTED:
        grants = [{"principal": f"{k}:{name}", "permissions": ["VIEW"]} for k in ("user", "role")]
        response = await api.put(url, json={"grants": grants}, headers=ALICE)
        assert response.status_code == 200, (name, response.text)
        assert [g["principal"] for g in response.json()["grants"]] == [
            f"user:{name}",
            f"role:{name}",
        ]


async def test_an_approver_no_sub_could_match_is_400_and_nothing_is_saved(
    api: httpx.AsyncClient,
) -> None:
    for name, says in [*((f"a{c}b", f"holds {k}") for c, k in REFUSED.items()),
                       (TOO_LONG, "is 201 characters long")]:  # fmt: skip
        for kind in ("user", "role"):
            response = await create(api, "gated", [gated(["user:bob", f"{kind}:{name}"])])
            assert_error(response, 400, "invalid_request", "humanReview.approvers[1]", says)
    listed = await api.get(f"{API}/workflows", headers=ALICE, params={"search": "gated"})
    assert listed.json()["pagination"]["total"] == 0
    approvers = [f"{k}:{name}" for name in ACCEPTED for k in ("user", "role")]
    response = await create(api, "gated", [gated(approvers)])
    assert response.status_code == 201, response.text
    assert response.json()["nodes"][0]["humanReview"]["approvers"] == approvers


async def test_principals_stored_before_the_rule_still_load_and_run(
    jwt_platform: Platform,
) -> None:
    p = jwt_platform
    wf = await p.create({"nodes": [gated(["user:placeholder", "role:finance"])]})
    record = await p.store.get_workflow(wf)
    assert record is not None and record.nodes[0].human_review is not None
    old = record.model_copy(deep=True, update={"version": record.version + 1})
    review = old.nodes[0].human_review
    assert review is not None
    review.approvers = ["user:a\x00b", "role:finance"]
    await p.store.update_workflow(old, new_version=True)
    assert await p.store.set_workflow_grants(
        wf,
        [
            Grant(principal="user:bob\u202e", permissions=["VIEW"]),
            Grant(principal="role:finance", permissions=["VIEW"]),
        ],
    )
    shown = await p.api.get(f"{API}/workflows/{wf}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["nodes"][0]["humanReview"]["approvers"][0] == "user:a\x00b"
    run = await p.api.post(f"{API}/workflows/{wf}/runs", json={"initialInput": {}})
    assert run.status_code == 202, run.text
    run_id = run.json()["runId"]
    await wait_for_gate(p, wf, run_id, "pay")
    inbox = (await p.api.get(f"{API}/approvals", headers=DANA_IN_FINANCE)).json()
    assert [a["approvers"] for a in inbox["approvals"]] == [["user:a\x00b", "role:finance"]]
    decided = await p.api.post(
        f"{API}/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "pay", "resolution": "confirm"},
        headers=DANA_IN_FINANCE,
    )
    assert decided.status_code == 200, decided.text
    assert (await p.wait(wf, run_id))["status"] == "completed"
    # A stored grant may be kept (`workflows share` sends every grant back) or revoked; a
    # new one is checked.
    url = f"{API}/workflows/{wf}/permissions"
    legacy = {"principal": "user:bob\u202e", "permissions": ["VIEW"]}
    added = {"principal": "user:zoë", "permissions": ["VIEW"]}
    kept = await p.api.put(url, json={"grants": [legacy, added]})
    assert kept.status_code == 200, kept.text
    new = {"principal": "user:c\u202e", "permissions": ["VIEW"]}
    refused = await p.api.put(url, json={"grants": [legacy, new]})
    assert_error(refused, 400, "invalid_request", "grants[1].principal")
    assert (await p.api.put(url, json={"grants": [added]})).status_code == 200
    assert (await p.api.put(url, json={"grants": [legacy]})).status_code == 400
    # A new version is a new write: the approver is named for the editor to fix.
    saved = await p.api.put(f"{API}/workflows/{wf}", json={"description": "new"})
    assert_error(saved, 400, "invalid_request", "approvers[0]", "U+0000")
