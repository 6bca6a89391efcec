"""A NUL in user JSON (a key, a search) through the API, on SQLite and on a FAKE MongoDB.

BSON's key names end at a NUL and a MongoDB server refuses a `$regex` holding one; the
MongoDB store keeps such values as SQLite does (mongo_values.py, `_literal_pattern`). On
the fake (tests/support/fake_mongo.py) a key with a NUL fails as the driver fails it and
such a pattern as the server refuses it. Before: a step output with such a key left the
run `running` (its write retried for ever), a definition or a run input with one was a
500, and a search with a NUL would have been a 500 on a server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.store.mongo import MongoStore
from tests.builders import echo, transform
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.fake_mongo import mongo_for_tests
from tests.support.platform import Platform, executor_registry, running_platform

KEY = "a\x00b"


@pytest.fixture(params=["sqlite", "mongodb"])
async def platform(
    request: pytest.FixtureRequest, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Platform]:
    store = None
    if request.param == "mongodb":
        url, options = mongo_for_tests()
        store = MongoStore(url, database=f"trellis_test_{uuid.uuid4().hex[:12]}", **options)
    async with (
        executor_registry() as registry,
        running_platform(temporal_env.client, tmp_path, registry, store=store) as platform,
    ):
        yield platform


async def test_a_step_output_with_a_nul_in_a_key_completes_the_run(platform: Platform) -> None:
    # The repro: the output's write was refused, and retried, for ever.
    run = await platform.run({"nodes": [transform("T", m="{'a\\u0000b': 1}")]})

    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["outputSnapshot"] == {"m": {KEY: 1}}
    detail = await platform.api.get(
        f"/api/v1/workflows/{run['workflowDefinitionId']}/runs/{run['id']}"
    )
    assert '"outputSnapshot":{"m":{"a\\u0000b":1}}' in detail.text


async def test_a_definition_and_a_run_input_with_a_nul_in_a_key_are_kept_exactly(
    platform: Platform,
) -> None:
    workflow_id = await platform.create({"nodes": [echo("Say", **{KEY: 1})]})
    path = f"/api/v1/workflows/{workflow_id}"
    shown = (await platform.api.get(path)).json()
    assert shown["nodes"][0]["config"] == {KEY: 1}
    changed = {**shown, "nodes": [echo("Say", **{"c\x00": {KEY: 2}})]}
    saved = await platform.api.put(path, json=changed)
    assert saved.status_code == 200, saved.text
    assert (await platform.api.get(path)).json()["nodes"][0]["config"] == {"c\x00": {KEY: 2}}
    first = (await platform.api.get(f"{path}/versions/1")).json()
    assert first["nodes"][0]["config"] == {KEY: 1}

    run_id = await platform.trigger(workflow_id, {"k\x00": 1})
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run
    assert run["initialInput"] == {"k\x00": 1}
    assert run["nodeRuns"][0]["outputSnapshot"]["config"] == {"c\x00": {KEY: 2}}
    listed = (await platform.api.get(f"{path}/runs")).json()
    assert [r["id"] for r in listed["runs"]] == [run_id]


async def test_a_gate_over_an_output_with_a_nul_in_a_key_is_in_the_inbox(
    platform: Platform,
) -> None:
    review = {"requiresOutputReview": True}
    workflow_id, run_id = await start(platform, [echo("draft", review, **{KEY: 1})])
    run = await wait_for_gate(platform, workflow_id, run_id, "draft")
    assert run["pendingRequirements"][0]["stepOutput"]["config"] == {KEY: 1}

    inbox = (await platform.api.get("/api/v1/approvals")).json()
    assert [a["runId"] for a in inbox["approvals"]] == [run_id]
    answer = await approve(platform, workflow_id, run_id, stepId="draft", resolution="confirm")
    assert answer.status_code == 200, answer.text
    assert (await platform.wait(workflow_id, run_id))["status"] == "completed"


async def test_a_search_with_a_nul_matches_only_what_holds_it(platform: Platform) -> None:
    # Names refuse control characters; a description may hold one.
    held = await platform.create({"description": "x\x00y", "nodes": [echo("S")]}, enable=False)
    await platform.create({"description": "xy", "nodes": [echo("S")]}, enable=False)

    for query, found in (("\x00", [held]), ("X\x00Y", [held]), ("\x00zz", [])):
        answer = await platform.api.get("/api/v1/workflows", params={"query": query})
        assert answer.status_code == 200, answer.text
        listed = answer.json()
        total = listed["pagination"]["total"]
        assert ([w["id"] for w in listed["workflows"]], total) == (found, len(found)), query
