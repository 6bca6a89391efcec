"""Retry, node rerun and replay honour `Idempotency-Key` as a trigger does: a repeat whose
answer was lost gets the same child run and starts no second one."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.builders import http_step
from tests.support.platform import Platform


@dataclass(frozen=True)
class Route:
    path: str
    status: int
    id_field: str  # contract 13 answers a rerun in snake_case
    calls: tuple[int, int]  # the peer's calls of steps a and flaky once one child ran


RETRY = Route("/retry", 200, "runId", (1, 2))  # reuses a, runs flaky again
RERUN = Route("/nodes/a/rerun", 202, "run_id", (2, 1))  # runs a, stops after it
REPLAY = Route("/replay", 202, "runId", (2, 2))  # runs everything again
ROUTES = [
    pytest.param(RETRY, id="retry"),
    pytest.param(RERUN, id="rerun"),
    pytest.param(REPLAY, id="replay"),
]


def runs_url(workflow_id: str, run_id: str = "") -> str:
    return f"/api/v1/workflows/{workflow_id}/runs" + (f"/{run_id}" if run_id else "")


def counted_flow(platform: Platform) -> dict[str, Any]:
    """Two counted calls per run input's tag; the second fails on its tag's first call."""
    return {
        "nodes": [
            http_step("a", f"{platform.peer_url}/echo/{{{{ input.tag }}}}-a"),
            http_step("flaky", f"{platform.peer_url}/flaky/{{{{ input.tag }}}}?failures=1"),
        ]
    }


async def failed_source(platform: Platform, wf: str) -> tuple[str, str]:
    """A failed run of the counted flow: (its id, its tag)."""
    tag = uuid.uuid4().hex[:12]
    run = await platform.wait(wf, await platform.trigger(wf, {"tag": tag}))
    assert run["status"] == "failed", run
    return run["id"], tag


async def children_of(platform: Platform, wf: str, run_id: str) -> list[str]:
    listed = await platform.api.get(runs_url(wf, run_id) + "/children")
    assert listed.status_code == 200, listed.text
    return [r["id"] for r in listed.json()["runs"]]


def without_status(body: dict[str, Any]) -> dict[str, Any]:
    """An answer but for the child's status, which moves on between a request and its repeat."""
    return {k: v for k, v in body.items() if k != "status"}


@pytest.mark.parametrize("route", ROUTES)
async def test_a_repeat_with_the_same_key_answers_the_same_child_and_starts_none(
    platform: Platform, route: Route
) -> None:
    wf = await platform.create(counted_flow(platform))
    source, tag = await failed_source(platform, wf)
    url, key = runs_url(wf, source) + route.path, {"Idempotency-Key": "retry-once"}
    first, second = await asyncio.gather(
        platform.api.post(url, headers=key), platform.api.post(url, headers=key)
    )
    assert first.status_code == second.status_code == route.status, second.text
    assert without_status(second.json()) == without_status(first.json())
    child_id = first.json()[route.id_field]
    assert (await platform.wait(wf, child_id))["status"] == "completed"
    # A repeat after the child ended (its answer lost long ago) answers it too.
    late = await platform.api.post(url, headers=key)
    assert late.status_code == route.status, late.text
    assert without_status(late.json()) == without_status(first.json())
    assert await children_of(platform, wf, source) == [child_id]
    assert (platform.peer.calls[f"{tag}-a"], platform.peer.calls[tag]) == route.calls


@pytest.mark.parametrize("route", ROUTES)
async def test_the_key_with_another_request_is_409_and_creates_nothing(
    platform: Platform, route: Route
) -> None:
    wf = await platform.create(counted_flow(platform))
    source, _ = await failed_source(platform, wf)
    other, _ = await failed_source(platform, wf)
    key = {"Idempotency-Key": "once-only"}
    first = await platform.api.post(runs_url(wf, source) + route.path, headers=key)
    assert first.status_code == route.status, first.text
    child_id = first.json()[route.id_field]
    others = [(other, route.path, "parentRunId")]  # another source run
    others += [(source, r.path, "triggerSource") for r in (RETRY, REPLAY) if r != route]
    if route == RERUN:
        others.append((source, "/nodes/flaky/rerun", "nodeId"))
    for run_id, path, differs in others:
        reused = await platform.api.post(runs_url(wf, run_id) + path, headers=key)
        assert reused.status_code == 409, (path, reused.text)
        error = reused.json()["error"]
        assert error["code"] == "conflict"
        assert child_id in error["message"] and differs in error["message"], error
    assert await children_of(platform, wf, other) == []
    assert await children_of(platform, wf, source) == [child_id]
    repeat = await platform.api.post(runs_url(wf, source) + route.path, headers=key)
    assert repeat.status_code == route.status and repeat.json()[route.id_field] == child_id
    await platform.wait(wf, child_id)


@pytest.mark.parametrize("route", ROUTES)
async def test_without_a_key_each_request_starts_a_child(platform: Platform, route: Route) -> None:
    wf = await platform.create(counted_flow(platform))
    source, _ = await failed_source(platform, wf)
    url = runs_url(wf, source) + route.path
    answers = [await platform.api.post(url), await platform.api.post(url)]
    assert [a.status_code for a in answers] == [route.status] * 2
    ids = [a.json()[route.id_field] for a in answers]
    assert ids[0] != ids[1]
    for child_id in ids:
        await platform.wait(wf, child_id)
    assert sorted(await children_of(platform, wf, source)) == sorted(ids)


async def test_keys_are_shared_with_triggers_within_a_workflow(platform: Platform) -> None:
    wf = await platform.create(counted_flow(platform))
    source, _ = await failed_source(platform, wf)
    key = {"Idempotency-Key": "order-7"}
    triggered = await platform.api.post(
        runs_url(wf), json={"initialInput": {"tag": uuid.uuid4().hex[:12]}}, headers=key
    )
    assert triggered.status_code == 202, triggered.text
    retried = await platform.api.post(runs_url(wf, source) + "/retry", headers=key)
    assert retried.status_code == 409, retried.text
    assert triggered.json()["runId"] in retried.json()["error"]["message"]
    assert await children_of(platform, wf, source) == []
    # The same key in another workflow is another key.
    elsewhere = await platform.create(counted_flow(platform))
    other_source, _ = await failed_source(platform, elsewhere)
    other = await platform.api.post(runs_url(elsewhere, other_source) + "/retry", headers=key)
    assert other.status_code == 200, other.text
    await platform.wait(elsewhere, other.json()["runId"])
    await platform.wait(wf, triggered.json()["runId"])


@pytest.mark.parametrize("route", [*ROUTES, pytest.param(None, id="trigger")])
async def test_a_repeat_after_the_workflow_was_disabled_answers_the_same_run(
    platform: Platform, route: Route | None
) -> None:
    wf = await platform.create(counted_flow(platform))
    source, tag = await failed_source(platform, wf)
    if route is None:
        url, status, id_field = runs_url(wf), 202, "runId"
        body: dict[str, Any] | None = {"initialInput": {"tag": tag}}
    else:
        url, status, id_field = runs_url(wf, source) + route.path, route.status, route.id_field
        body = None
    first = await platform.api.post(url, json=body, headers={"Idempotency-Key": "lost"})
    assert first.status_code == status, first.text
    run_id = first.json()[id_field]
    await platform.wait(wf, run_id)
    toggled = await platform.api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": False})
    assert toggled.status_code == 200, toggled.text
    # The answer was lost: the repeat must not say that nothing runs.
    repeat = await platform.api.post(url, json=body, headers={"Idempotency-Key": "lost"})
    assert repeat.status_code == status, repeat.text
    assert without_status(repeat.json()) == without_status(first.json())
    # A new request is refused as before, and creates nothing.
    fresh = await platform.api.post(url, json=body, headers={"Idempotency-Key": "new"})
    assert fresh.status_code == 400, fresh.text
    assert "disabled" in fresh.json()["error"]["message"]
    listed = (await platform.api.get(runs_url(wf))).json()["runs"]
    assert sorted(r["id"] for r in listed) == sorted([source, run_id])
