"""Approvers per gate: only they may decide it; the inbox shows each caller what they may
decide and says who may decide each gate."""

from __future__ import annotations

from typing import Any

import httpx

from app.auth.caller import CONTROL, READ
from tests.api.helpers import API, assert_error
from tests.builders import echo
from tests.hitl.helpers import start, wait_for_gate
from tests.support.identity import as_user
from tests.support.platform import Platform

BOB = as_user("bob", [READ, CONTROL])
CAROL_IN_OPS = as_user("carol", [READ, CONTROL], roles=["ops"])
DANA_IN_FINANCE = as_user("dana", [READ, CONTROL], roles=["finance"])


def gated(step_id: str, approvers: list[str] | None = None) -> dict[str, Any]:
    review: dict[str, Any] = {"requiresConfirmation": True}
    if approvers is not None:
        review["approvers"] = approvers
    return echo(step_id, review)


async def share(p: Platform, wf: str, *principals: str) -> None:
    grants = [{"principal": who, "permissions": ["VIEW"]} for who in principals]
    response = await p.api.put(f"{API}/workflows/{wf}/permissions", json={"grants": grants})
    assert response.status_code == 200, response.text


async def decide(p: Platform, wf: str, run_id: str, headers: dict[str, str]) -> httpx.Response:
    return await p.api.post(
        f"{API}/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "pay", "resolution": "confirm"},
        headers=headers,
    )


async def inbox(p: Platform, headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = await p.api.get(f"{API}/approvals", headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


class TestSaving:
    async def test_approvers_are_kept_with_the_definition(self, jwt_platform: Platform) -> None:
        wf = await jwt_platform.create({"nodes": [gated("pay", ["user:bob", "role:finance"])]})
        body = (await jwt_platform.api.get(f"{API}/workflows/{wf}")).json()
        assert body["nodes"][0]["humanReview"]["approvers"] == ["user:bob", "role:finance"]

    async def test_bad_approvers_are_400_and_nothing_is_saved(self, jwt_platform: Platform) -> None:
        p = jwt_platform
        cases: list[tuple[dict[str, Any], str]] = [
            (gated("pay", ["bob"]), "'user:<sub>' or 'role:<role>'"),
            (gated("pay", ["group:x"]), "'user:<sub>' or 'role:<role>'"),
            # A `$` let a trailing line end through: no token's subject ends in one.
            (gated("pay", ["user:bob\n"]), "'user:<sub>' or 'role:<role>'"),
            (gated("pay", ["user:bob", "user:bob"]), "twice"),
            (echo("pay", {"approvers": ["user:bob"]}), "needs a gate"),
        ]
        for node, fragment in cases:
            body = {"name": "bad approvers", "nodes": [node]}
            response = await p.api.post(f"{API}/workflows", json=body)
            assert_error(response, 400, "invalid_request", fragment)
            assert response.json()["error"]["details"][0]["path"].startswith("nodes[0]")
        listed = (await p.api.get(f"{API}/workflows")).json()
        assert listed["pagination"]["total"] == 0


class TestDeciding:
    async def test_only_an_approver_may_decide(self, jwt_platform: Platform) -> None:
        p = jwt_platform
        wf, run_id = await start(p, [gated("pay", ["user:bob", "role:finance"])])
        await share(p, wf, "role:ops", "role:finance", "user:bob")
        await wait_for_gate(p, wf, run_id, "pay")
        for outsider in (CAROL_IN_OPS, {}):  # a viewer with the scope; the owner herself
            response = await decide(p, wf, run_id, outsider)
            assert_error(response, 403, "forbidden", "user:bob, role:finance")
            # Named as a reuse's refusal names it: id and name (found by an audit).
            assert "may decide step 'pay' ('pay')" in response.json()["error"]["message"]
        run = (await p.api.get(f"{API}/workflows/{wf}/runs/{run_id}")).json()
        assert [r["stepId"] for r in run["pendingRequirements"]] == ["pay"]
        response = await decide(p, wf, run_id, DANA_IN_FINANCE)
        assert response.status_code == 200, response.text
        run = await p.wait(wf, run_id)
        assert run["status"] == "completed"
        assert run["resolvedRequirements"][0]["decidedBy"] == "dana"
        # The run over, one who may not decide is still told so: 403, not 409 "completed".
        assert_error(await decide(p, wf, run_id, CAROL_IN_OPS), 403, "forbidden", "user:bob")

    async def test_an_approver_who_cannot_see_the_workflow_gets_404(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        wf, run_id = await start(p, [gated("pay", ["user:bob"])])
        await wait_for_gate(p, wf, run_id, "pay")
        assert_error(await decide(p, wf, run_id, BOB), 404, "resource_not_found")

    async def test_without_approvers_anyone_who_may_control_decides(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        wf, run_id = await start(p, [gated("pay")])
        await share(p, wf, "user:bob")
        await wait_for_gate(p, wf, run_id, "pay")
        assert (await decide(p, wf, run_id, BOB)).status_code == 200


class TestInbox:
    async def test_each_caller_sees_only_the_gates_they_may_decide(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        restricted, run_r = await start(p, [gated("pay", ["user:bob"])])
        open_to_all, run_o = await start(p, [gated("pay")])
        hidden, run_h = await start(p, [gated("pay", ["user:bob"])])
        await share(p, restricted, "user:bob", "role:ops")
        await share(p, open_to_all, "user:bob", "role:ops")
        for wf, run_id in ((restricted, run_r), (open_to_all, run_o), (hidden, run_h)):
            await wait_for_gate(p, wf, run_id, "pay")

        bobs = await inbox(p, BOB)
        assert {(a["runId"], tuple(a["approvers"])) for a in bobs["approvals"]} == {
            (run_r, ("user:bob",)),
            (run_o, ()),
        }
        assert bobs["pagination"]["total"] == 2
        carols = await inbox(p, CAROL_IN_OPS)
        assert [a["runId"] for a in carols["approvals"]] == [run_o]
        assert carols["pagination"]["total"] == 1
        alices = await inbox(p)  # the owner, not among the approvers of two of them
        assert [a["runId"] for a in alices["approvals"]] == [run_o]
        readers = await inbox(p, as_user("bob", [READ]))  # no workflows-control: decides none
        assert readers["approvals"] == [] and readers["pagination"]["total"] == 0

    async def test_dev_mode_admin_sees_and_decides_every_gate(self, platform: Platform) -> None:
        wf, run_id = await start(platform, [gated("pay", ["user:bob"])])
        await wait_for_gate(platform, wf, run_id, "pay")
        entries = (await inbox(platform))["approvals"]
        assert [(a["runId"], a["approvers"]) for a in entries] == [(run_id, ["user:bob"])]
        assert (await decide(platform, wf, run_id, {})).status_code == 200
