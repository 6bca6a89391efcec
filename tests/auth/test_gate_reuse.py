"""A gate's decision stands in for its approvers only: a new run (contract 7's form) may
reuse the decided output of a gate naming approvers only when its caller is one of them.
A retry reuses it with the source run's own input and snapshot, whoever asks."""

from __future__ import annotations

from typing import Any

from app.auth.caller import CONTROL, READ
from tests.api.helpers import API, assert_error
from tests.auth.test_approvers import BOB, decide, gated, share
from tests.builders import echo, http_step
from tests.hitl.helpers import start, wait_for_gate
from tests.support.identity import as_user
from tests.support.platform import Platform

# VIEW on the workflow (shared below) and workflows-control; no approver.
MALLORY = as_user("mallory", [READ, CONTROL])
APPROVERS = ["user:bob", "role:finance"]


def pay_flow(p: Platform, key: str, approvers: list[str] | None = APPROVERS) -> list[Any]:
    """`prep`, the gated `pay`, and `after`: a counted call the gate is there to guard."""
    return [echo("prep"), gated("pay", approvers), http_step("after", f"{p.peer_url}/echo/{key}")]


async def decided_run(p: Platform, nodes: list[Any], status: str = "completed") -> tuple[str, Any]:
    """A run of `nodes` on `{"x": "ok"}` whose gate bob confirmed, ended in `status`."""
    wf, run_id = await start(p, nodes, {"x": "ok"})
    await share(p, wf, "user:bob", "user:mallory")
    await wait_for_gate(p, wf, run_id, "pay")
    assert (await decide(p, wf, run_id, BOB)).status_code == 200
    run = await p.wait(wf, run_id)
    assert run["status"] == status, run
    return wf, run


def reusing_the_gate(source: dict[str, Any], initial: dict[str, Any]) -> dict[str, Any]:
    """Contract 7's form: `prep` and `pay` reused from `source`, `after` run again."""
    done = {n["nodeId"]: n["id"] for n in source["nodeRuns"]}
    reuse = [
        {"nodeId": n, "resolution": "reuse_previous_output", "sourceNodeRunId": done[n]}
        for n in ("prep", "pay")
    ]
    return {
        "initialInput": initial,
        "triggerSource": "retry",
        "parentRunId": source["id"],
        "resolvedDependencies": [*reuse, {"nodeId": "after", "resolution": "rerun"}],
    }


async def run_total(p: Platform, wf: str) -> int:
    listed = (await p.api.get(f"{API}/workflows/{wf}/runs")).json()
    return listed["pagination"]["total"]  # type: ignore[no-any-return]


class TestTheExplicitForm:
    async def test_one_not_an_approver_may_not_reuse_a_decided_gate(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        wf, source = await decided_run(p, pay_flow(p, "guarded"))
        url = f"{API}/workflows/{wf}/runs"
        key = {"Idempotency-Key": "mallory-once"}
        # A new input, and the source's own: the caller still picks what runs again.
        for initial in ({"x": "evil"}, {"x": "ok"}):
            body = reusing_the_gate(source, initial)
            response = await p.api.post(url, json=body, headers={**MALLORY, **key})
            assert_error(response, 403, "forbidden", "user:bob, role:finance", "'pay'")
        assert await run_total(p, wf) == 1
        children = (await p.api.get(f"{url}/{source['id']}/children")).json()
        assert children["pagination"]["total"] == 0
        assert p.peer.calls["guarded"] == 1
        # No idempotency record was kept: the key starts another request (else a 409).
        plain = {"initialInput": {"x": "evil"}}
        response = await p.api.post(url, json=plain, headers={**MALLORY, **key})
        assert response.status_code == 202, response.text

    async def test_an_approver_may_reuse_the_decision_with_a_new_input(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        wf, source = await decided_run(p, pay_flow(p, "bobs"))
        body = reusing_the_gate(source, {"x": "evil"})
        response = await p.api.post(f"{API}/workflows/{wf}/runs", json=body, headers=BOB)
        assert response.status_code == 202, response.text
        child = await p.wait(wf, response.json()["runId"])
        assert child["status"] == "completed" and child["resolvedRequirements"] == []
        pay = next(n for n in source["nodeRuns"] if n["nodeId"] == "pay")
        reused = {n["nodeId"]: n["reusedFromNodeRunId"] for n in child["nodeRuns"]}
        assert reused["pay"] == pay["id"]
        assert p.peer.calls["bobs"] == 2

    async def test_a_gate_without_approvers_is_reused_by_anyone_who_may_control(
        self, jwt_platform: Platform
    ) -> None:
        p = jwt_platform
        wf, source = await decided_run(p, pay_flow(p, "open", approvers=None))
        body = reusing_the_gate(source, {"x": "evil"})
        response = await p.api.post(f"{API}/workflows/{wf}/runs", json=body, headers=MALLORY)
        assert response.status_code == 202, response.text
        child = await p.wait(wf, response.json()["runId"])
        assert child["status"] == "completed" and child["resolvedRequirements"] == []

    async def test_dev_mode_reuses_as_before(self, platform: Platform) -> None:
        wf, run_id = await start(platform, pay_flow(platform, "dev"), {"x": "ok"})
        await wait_for_gate(platform, wf, run_id, "pay")
        assert (await decide(platform, wf, run_id, {})).status_code == 200
        source = await platform.wait(wf, run_id)
        body = reusing_the_gate(source, {"x": "evil"})
        response = await platform.api.post(f"{API}/workflows/{wf}/runs", json=body)
        assert response.status_code == 202, response.text
        assert (await platform.wait(wf, response.json()["runId"]))["status"] == "completed"


class TestRetry:
    async def test_a_retry_reuses_the_decided_gate_whoever_asks(
        self, jwt_platform: Platform
    ) -> None:
        # Same input, same snapshot, every completed step reused: the decision bob made
        # is on what the retry holds, so one who may control the run may retry it.
        p = jwt_platform
        flaky = http_step("after", f"{p.peer_url}/flaky/retried?failures=1")
        wf, source = await decided_run(p, [echo("prep"), gated("pay", APPROVERS), flaky], "failed")
        url = f"{API}/workflows/{wf}/runs/{source['id']}/retry"
        response = await p.api.post(url, headers=MALLORY)
        assert response.status_code == 200, response.text
        child = await p.wait(wf, response.json()["runId"])
        assert child["status"] == "completed" and child["initialInput"] == {"x": "ok"}
        pay = next(n for n in source["nodeRuns"] if n["nodeId"] == "pay")
        reused = {n["nodeId"]: n["reusedFromNodeRunId"] for n in child["nodeRuns"]}
        assert reused["pay"] == pay["id"] and child["resolvedRequirements"] == []
