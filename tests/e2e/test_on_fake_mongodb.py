"""The whole platform on the MongoDB store, as docker-compose runs it, with a FAKE MongoDB.

No MongoDB server can run on this machine, so the store's client is the named fake of
tests/support/fake_mongo.py (mongomock behind PyMongo's async API): what this shows is that
the API and the worker work through `MongoStore` (definitions, runs, node runs, a gate's
decision, events, live streams without change streams), not how a server behaves. With
TRELLIS_TEST_MONGODB_URL set, the same tests run on that server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.registry import ExecutorRegistry
from activities.store.mongo import MongoStore
from tests.builders import echo, step
from tests.e2e.helpers import node_runs
from tests.events.sse import read_all
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.fake_mongo import mongo_for_tests
from tests.support.platform import Platform, running_platform


@pytest.fixture
async def platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peer_registry: ExecutorRegistry
) -> AsyncIterator[Platform]:
    url, options = mongo_for_tests()
    store = MongoStore(url, database=f"trellis_test_{uuid.uuid4().hex[:12]}", **options)
    async with running_platform(
        temporal_env.client, tmp_path, peer_registry, store=store
    ) as platform:
        yield platform


async def test_a_definition_is_saved_listed_and_versioned(platform: Platform) -> None:
    workflow_id = await platform.create({"name": "On Mongo", "nodes": [echo("Say", text="hi")]})
    path = f"/api/v1/workflows/{workflow_id}"

    shown = (await platform.api.get(path)).json()
    assert shown["name"] == "On Mongo"
    assert shown["enabled"] is True
    listed = (await platform.api.get("/api/v1/workflows", params={"query": "on mongo"})).json()
    assert [w["id"] for w in listed["workflows"]] == [workflow_id]

    changed = {**shown, "description": "second version"}
    saved = await platform.api.put(path, json=changed)
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == 2
    versions = (await platform.api.get(f"{path}/versions")).json()
    assert [v["version"] for v in versions["versions"]] == [1, 2]

    taken = await platform.api.post("/api/v1/workflows", json={**changed, "name": "On Mongo"})
    assert taken.status_code == 409, taken.text


async def test_a_run_of_mcp_and_built_in_steps_completes_and_reads_back(
    platform: Platform,
) -> None:
    run = await platform.run(
        {"nodes": [step("Add", "peer-http/add", {"a": "{{ a }}", "b": 3}), echo("Say", text="x")]},
        {"a": 2},
    )

    assert run["status"] == "completed", run
    steps = node_runs(run)
    assert steps["Add"]["outputSnapshot"] == {"total": 5}
    assert steps["Say"]["status"] == "completed"
    workflow_id = run["workflowDefinitionId"]
    runs = (await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs")).json()
    assert [r["id"] for r in runs["runs"]] == [run["id"]]
    assert runs["runs"][0]["status"] == "completed"


async def test_a_gate_is_decided_once_and_the_run_streams_its_events(platform: Platform) -> None:
    workflow_id, run_id = await start(platform, [echo("gate", {"requiresConfirmation": True})])
    await wait_for_gate(platform, workflow_id, run_id, "gate")

    first = await approve(platform, workflow_id, run_id, stepId="gate", resolution="confirm")
    again = await approve(platform, workflow_id, run_id, stepId="gate", resolution="confirm")
    assert first.status_code == 200, first.text
    assert again.status_code == 409, again.text

    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run
    assert run["pendingRequirements"] == []
    # MongoDB without change streams: the live stream follows the run by polling the store.
    events = await read_all(platform.api, f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events")
    kinds = [m.event for m in events if m.event]
    assert kinds[0] == "run_started"
    assert "awaiting_approval" in kinds
    assert kinds[-1] == "run_completed"


MIB = 1024 * 1024


async def test_a_run_whose_input_and_output_pass_sixteen_mib_completes_and_reads_back(
    platform: Platform,
) -> None:
    # A MongoDB document holds 16 MiB: the run's input and output (~15 MiB each), and the
    # step's input (its config, 5 MiB) and output, do not fit in one together.
    blob = {"a": "a" * (5 * MIB), "b": "b" * (5 * MIB)}
    run = await platform.run({"nodes": [echo("Say", part="{{ input.a }}")]}, blob)

    assert run["status"] == "completed", run["errorSummary"]
    assert run["initialInput"] == blob
    assert run["finalOutput"] == {"config": {"part": blob["a"]}, "input": blob}
    path = f"/api/v1/workflows/{run['workflowDefinitionId']}/runs/{run['id']}/nodes"
    [say] = (await platform.api.get(path)).json()["nodeRuns"]
    alone = (await platform.api.get(f"{path}/{say['id']}")).json()
    for node_run in (node_runs(run)["Say"], say, alone):
        assert node_run["status"] == "completed"
        assert node_run["inputSnapshot"] == {"part": blob["a"]}
        assert node_run["outputSnapshot"] == run["finalOutput"]
