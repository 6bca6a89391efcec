"""Who did what is recorded: a run's triggeredBy, each decision's decidedBy and source, each
control's requestedBy; never a token, in no record, answer or Temporal history."""

from __future__ import annotations

import json
from typing import Any

from app.auth.caller import ALL_SCOPES, CONTROL, READ, WRITE
from tests.builders import echo
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.support.identity import ALICE_TOKEN, as_user
from tests.support.platform import Platform

GATED = [echo("send", {"requiresConfirmation": True}), echo("after")]


async def events_of(p: Platform, wf: str, run_id: str) -> list[dict[str, Any]]:
    return await p.store.list_events(run_id, 0, 1000)


async def share_with(p: Platform, wf: str, principal: str) -> None:
    body = {"grants": [{"principal": principal, "permissions": ["VIEW"]}]}
    response = await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=body)
    assert response.status_code == 200, response.text


async def test_a_run_records_who_triggered_it_and_never_the_token(
    jwt_platform: Platform,
) -> None:
    p = jwt_platform
    wf, run_id = await start(p, [echo("only")])
    run = await p.wait(wf, run_id)
    assert run["status"] == "completed"
    assert run["triggeredBy"] == {
        "userId": "alice",
        "username": "Alice",
        "scopes": sorted(ALL_SCOPES),
    }
    listed = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()["runs"][0]
    assert listed["triggeredBy"]["userId"] == "alice"
    signature = ALICE_TOKEN.rsplit(".", 1)[1]
    record = await p.store.get_run(run_id)
    assert record is not None and record.triggered_by is not None
    assert signature not in record.model_dump_json()
    assert signature not in json.dumps(run)
    history = await p.client.get_workflow_handle(run_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    run_input = json.loads(started.input.payloads[0].data)
    assert run_input["triggeredBy"]["userId"] == "alice"
    # Every payload of the history, as text (protobuf's text form shows payload bytes).
    assert signature not in str(history.events) and signature not in history.to_json()


async def test_decisions_record_the_deciders_sub_as_a_users(jwt_platform: Platform) -> None:
    p = jwt_platform
    wf, run_id = await start(p, GATED)
    await share_with(p, wf, "user:bob")
    await wait_for_gate(p, wf, run_id, "send")
    response = await p.api.post(
        f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "send", "resolution": "confirm"},
        headers=as_user("bob", [READ, CONTROL]),
    )
    assert response.status_code == 200, response.text
    run = await p.wait(wf, run_id)
    decided = run["resolvedRequirements"][0]
    assert (decided["decidedBy"], decided["source"]) == ("bob", "user")
    resolved = [e for e in await events_of(p, wf, run_id) if e["type"] == "requirement_resolved"]
    assert (resolved[0]["decidedBy"], resolved[0]["source"]) == ("bob", "user")


async def test_a_user_named_timeout_decides_as_a_person(jwt_platform: Platform) -> None:
    p = jwt_platform
    gate = {"requiresConfirmation": True, "onReject": "cancel", "onTimeout": "skip"}
    wf, run_id = await start(p, [echo("send", gate), echo("after")])
    await share_with(p, wf, "user:timeout")
    await wait_for_gate(p, wf, run_id, "send")
    response = await p.api.post(
        f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
        json={"stepId": "send", "resolution": "reject"},
        headers=as_user("timeout", [READ, CONTROL]),
    )
    assert response.status_code == 200, response.text
    run = await p.wait(wf, run_id)
    # A timer's reject would skip (onTimeout); a person's cancels the run (onReject).
    assert run["status"] == "cancelled", run
    decided = run["resolvedRequirements"][0]
    assert (decided["decidedBy"], decided["source"], decided["resolution"]) == (
        "timeout",
        "user",
        "reject",
    )


async def test_controls_record_who_requested_them(jwt_platform: Platform) -> None:
    p = jwt_platform
    wf, run_id = await start(p, GATED)
    await wait_for_gate(p, wf, run_id, "send")
    for action in ("pause", "resume", "cancel"):
        response = await control(p, wf, run_id, action)
        assert response.status_code == 200, (action, response.text)
    await p.wait(wf, run_id)
    events = {e["type"]: e for e in await events_of(p, wf, run_id)}
    for kind in ("run_paused", "run_resumed", "cancel_requested"):
        assert events[kind]["requestedBy"] == "alice", events[kind]
    history = await p.client.get_workflow_handle(run_id).fetch_history()
    assert "cancel requested by alice" in history.to_json()


async def test_a_child_run_records_who_asked_for_it(jwt_platform: Platform) -> None:
    p = jwt_platform
    wf, run_id = await start(p, [echo("only")])
    await p.wait(wf, run_id)
    await share_with(p, wf, "user:bob")
    response = await p.api.post(
        f"/api/v1/workflows/{wf}/runs/{run_id}/replay", headers=as_user("bob", [CONTROL])
    )
    assert response.status_code == 202, response.text
    child = await p.wait(wf, response.json()["runId"])
    assert child["triggeredBy"] == {"userId": "bob", "username": None, "scopes": [CONTROL]}


async def test_dev_mode_runs_have_no_triggering_identity(platform: Platform) -> None:
    wf, run_id = await start(platform, GATED)
    await wait_for_gate(platform, wf, run_id, "send")
    assert (await approve(platform, wf, run_id, stepId="send", resolution="confirm")).is_success
    run = await platform.wait(wf, run_id)
    assert run["triggeredBy"] is None
    assert run["resolvedRequirements"][0]["decidedBy"] == "dev"


async def test_an_idempotency_key_is_the_callers_own(jwt_platform: Platform) -> None:
    # Bob repeating Alice's key was answered 202 with Alice's run: his trigger was
    # recorded nowhere, and the run said Alice triggered it.
    p = jwt_platform
    wf, run_id = await start(p, [echo("only")])
    await p.wait(wf, run_id)
    await share_with(p, wf, "user:bob")
    bob = as_user("bob", [READ, CONTROL])
    for path in (f"/api/v1/workflows/{wf}/runs", f"/api/v1/workflows/{wf}/runs/{run_id}/replay"):
        key = {"Idempotency-Key": f"key-{path.rsplit('/', 1)[1]}"}
        first = await p.api.post(path, headers=key)
        assert first.status_code == 202, first.text
        refused = await p.api.post(path, headers={**bob, **key})
        assert refused.status_code == 409, refused.text
        assert "triggeredBy" in refused.json()["error"]["message"]
        again = await p.api.post(path, headers=key)
        assert again.json()["runId"] == first.json()["runId"]
        run = await p.wait(wf, first.json()["runId"])
        assert run["triggeredBy"]["userId"] == "alice"


async def test_a_schedule_key_is_the_callers_own(jwt_platform: Platform) -> None:
    # As a trigger's: Bob repeating Alice's key is not answered with Alice's schedule.
    p = jwt_platform
    wf, _ = await start(p, [echo("only")])
    body = {"grants": [{"principal": "user:bob", "permissions": ["VIEW", "EDIT"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=body)).is_success
    schedules, key = f"/api/v1/workflows/{wf}/schedules", {"Idempotency-Key": "nightly"}
    first = await p.api.post(schedules, json={"intervalSeconds": 3600}, headers=key)
    assert first.status_code == 201, first.text
    try:
        refused = await p.api.post(
            schedules,
            json={"intervalSeconds": 3600},
            headers={**as_user("bob", [READ, WRITE, CONTROL]), **key},
        )
        assert refused.status_code == 409, refused.text
        assert "(createdBy differs)" in refused.json()["error"]["message"]
        again = await p.api.post(schedules, json={"intervalSeconds": 3600}, headers=key)
        assert again.json()["id"] == first.json()["id"]
    finally:
        await p.api.delete(f"{schedules}/{first.json()['id']}")


async def test_each_version_records_who_saved_it(jwt_platform: Platform) -> None:
    # Who changed a workflow that then misbehaved: each version names its saver (found by
    # an audit: versions recorded when, not who).
    p = jwt_platform
    wf, _ = await start(p, [echo("only")])
    body = {"grants": [{"principal": "user:bob", "permissions": ["VIEW", "EDIT"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=body)).is_success
    bob = as_user("bob", [READ, WRITE])
    url = f"/api/v1/workflows/{wf}"
    saved = await p.api.put(url, json={"description": "by bob"}, headers=bob)
    assert saved.status_code == 200, saved.text
    # A toggle and a save changing nothing make no version, and name no one.
    assert (await p.api.put(url, json={"enabled": False}, headers=bob)).is_success
    assert (await p.api.put(url, json={"description": "by bob"})).is_success
    listed = (await p.api.get(f"{url}/versions")).json()["versions"]
    assert [(v["version"], v["createdBy"]) for v in listed] == [(1, "alice"), (2, "bob")]
    assert (await p.api.get(f"{url}/versions/2")).json()["createdBy"] == "bob"
    # The workflow itself answers as the contract has it: no saver field.
    assert "savedBy" not in (await p.api.get(url)).json()


async def test_a_schedule_records_its_creator_and_who_paused_it(jwt_platform: Platform) -> None:
    # A schedule starts runs for good: an operator must find who set it up (found by an
    # audit: a schedule recorded no creator, and its runs no triggering identity).
    p = jwt_platform
    wf, _ = await start(p, [echo("only")])
    body = {"grants": [{"principal": "user:bob", "permissions": ["VIEW", "EDIT"]}]}
    assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=body)).is_success
    schedules = f"/api/v1/workflows/{wf}/schedules"
    made = await p.api.post(schedules, json={"intervalSeconds": 3600})
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    try:
        assert made.json()["createdBy"] == "alice"
        bob = as_user("bob", [READ, WRITE, CONTROL])
        paused = await p.api.post(f"{schedules}/{sid}/pause", headers=bob)
        assert paused.json()["note"] == "Paused by bob through the Trellis API", paused.text
        unpaused = await p.api.post(f"{schedules}/{sid}/unpause")
        assert unpaused.json()["note"] == "Unpaused by alice through the Trellis API"
        # Bob's change leaves the creator; a GET's body, createdBy in it, can be PUT back.
        shown = (await p.api.get(f"{schedules}/{sid}")).json()
        put = {k: v for k, v in shown.items() if v is not None} | {"intervalSeconds": 60}
        replaced = await p.api.put(f"{schedules}/{sid}", json=put, headers=bob)
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["createdBy"] == "alice"
        listed = (await p.api.get(schedules)).json()["schedules"]
        assert [s["createdBy"] for s in listed] == ["alice"]
        # Temporal refused a long note, and the pause (found by an audit: a 1,000-character
        # sub could pause nothing); such a sub is refused now, and the longest one fits.
        body = {"grants": [{"principal": "role:ops", "permissions": ["VIEW", "EDIT"]}]}
        assert (await p.api.put(f"/api/v1/workflows/{wf}/permissions", json=body)).is_success
        too_long = as_user("u" * 1001, [READ, WRITE, CONTROL], roles=["ops"])
        refused = await p.api.post(f"{schedules}/{sid}/pause", headers=too_long)
        assert refused.status_code == 401, refused.text
        long = "u" + "x" * 199
        as_long = as_user(long, [READ, WRITE, CONTROL], roles=["ops"])
        paused = await p.api.post(f"{schedules}/{sid}/pause", headers=as_long)
        assert paused.status_code == 200, paused.text
        assert paused.json()["note"] == f"Paused by {long} through the Trellis API"
    finally:
        await p.api.delete(f"{schedules}/{sid}")


async def test_a_writer_without_control_starts_no_run_through_a_schedule(
    jwt_platform: Platform,
) -> None:
    # Triggering a run needs workflows-control; a schedule is a trigger that fires later.
    p = jwt_platform
    wf, _ = await start(p, [echo("only")])
    schedules = f"/api/v1/workflows/{wf}/schedules"
    writer = as_user("alice", [READ, WRITE])
    refused = await p.api.post(schedules, json={"intervalSeconds": 1}, headers=writer)
    assert refused.status_code == 403, refused.text
    assert CONTROL in refused.json()["error"]["message"]
    assert (await p.api.get(schedules)).json()["schedules"] == []
    made = await p.api.post(schedules, json={"intervalSeconds": 3600, "paused": True})
    sid = made.json()["id"]
    try:
        for action, body in (("", {"intervalSeconds": 1}), ("/unpause", None), ("/trigger", None)):
            answer = await p.api.request(
                "PUT" if not action else "POST",
                f"{schedules}/{sid}{action}",
                json=body,
                headers=writer,
            )
            assert answer.status_code == 403, (action, answer.text)
        shown = (await p.api.get(f"{schedules}/{sid}")).json()
        assert shown["paused"] is True and shown["intervalSeconds"] == 3600
        assert shown["numActions"] == 0
        # Pausing and deleting stop runs: a writer may.
        assert (await p.api.post(f"{schedules}/{sid}/pause", headers=writer)).is_success
    finally:
        await p.api.delete(f"{schedules}/{sid}")
    runs = (await p.api.get(f"/api/v1/workflows/{wf}/runs")).json()
    assert runs["pagination"]["total"] == 1  # start()'s own run only


async def test_a_runs_username_is_the_name_claim_cleaned_and_cut(jwt_platform: Platform) -> None:
    # A 30 KB name with a newline and ESC was stored as it came; it is display only.
    p = jwt_platform
    wf = await p.create({"nodes": [echo("only")]})
    named = as_user("alice", name="Ada\n\x1b[31mL\u202eove" + "x" * 30_000)
    started = await p.api.post(
        f"/api/v1/workflows/{wf}/runs", json={"initialInput": {}}, headers=named
    )
    assert started.status_code == 202, started.text
    run = await p.wait(wf, started.json()["runId"])
    assert run["triggeredBy"]["username"] == ("Ada [31mL ove" + "x" * 200)[:200]
