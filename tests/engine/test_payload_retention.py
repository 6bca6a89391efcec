"""Large payloads (kept in the store, out of Temporal history) go with the last run whose
history carries them: under run retention and with their workflow. A run still present,
sharing the bytes or reusing its deleted parent's outputs, keeps them, reads and replays."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from temporalio.worker import Replayer

from activities.metrics import RunMetrics
from activities.payloads import data_converter
from app.firing_payloads import FiringPayloads
from app.run_retention import RunRetention
from temporal_workflows.interpreter import TrellisRun
from tests.builders import delay, echo
from tests.support.platform import Platform
from tests.support.polling import eventually

# Over the 256 KiB threshold: the run's input, and the step's output that echoes it.
LARGE_INPUT = {"pad": "x" * 300_000}
FLOW = {"nodes": [echo("big", v="{{ input.pad }}"), echo("small", v="1")]}
# The same, then open until closed by hand.
HELD = {"nodes": [echo("big", v="{{ input.pad }}"), delay("hold", 600)]}


def run_url(wf: str, run_id: str) -> str:
    return f"/api/v1/workflows/{wf}/runs/{run_id}"


async def claims(p: Platform, run_id: str) -> set[str]:
    """The store keys of the payloads the run's Temporal history carries as claims."""
    history = await p.client.get_workflow_handle(run_id).fetch_history()
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "externalPayloads" in value:
                found.add(json.loads(base64.b64decode(value["data"]))["claimData"]["key"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(history.to_json_dict())
    return found


async def present(p: Platform, keys: set[str]) -> set[str]:
    return {key for key in keys if await p.store.get_payload(key) is not None}


async def replays(p: Platform, run_id: str) -> None:
    history = await p.client.get_workflow_handle(run_id).fetch_history()
    replayer = Replayer(workflows=[TrellisRun], data_converter=data_converter(p.store))
    await replayer.replay_workflow(history)


async def test_retention_deletes_a_runs_payloads_and_its_child_keeps_what_it_reused(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    p = platform
    caplog.set_level(logging.INFO, "trellis.reconciler")
    wf = await p.create(FLOW)
    parent = await p.trigger(wf, LARGE_INPUT)
    ended = await p.wait(wf, parent)
    assert ended["status"] == "completed"
    await p.client.get_workflow_handle(parent).result()
    await asyncio.sleep(1.5)
    # A rerun of the last step reuses the parent's large output (`reuse_previous_output`).
    rerun = await p.api.post(run_url(wf, parent) + "/nodes/small/rerun")
    assert rerun.status_code == 202, rerun.text
    child = rerun.json()["run_id"]
    assert (await p.wait(wf, child))["status"] == "completed"
    await p.client.get_workflow_handle(child).result()
    of_parent, of_child = await claims(p, parent), await claims(p, child)
    assert len(of_parent) >= 2 and await present(p, of_parent) == of_parent
    shared = of_parent & of_child
    assert shared, "the child's history carries the reused output's bytes"

    # Only the parent ended before the cutoff.
    parent_end = datetime.fromisoformat(ended["finishedAt"])
    retention = datetime.now(UTC) - (parent_end + timedelta(seconds=0.5))
    registry = CollectorRegistry()
    deleted, _ = await RunRetention(p.store, retention, RunMetrics(registry)).sweep()
    assert deleted == 1
    assert (await p.api.get(run_url(wf, parent))).status_code == 404

    assert await present(p, of_parent) == shared
    assert await present(p, of_child) == of_child
    # Counted: those of its history only, and what it stored for itself that its history
    # does not show (a local activity's input, say).
    counted = registry.get_sample_value("trellis_payloads_deleted_total")
    assert counted is not None and counted >= len(of_parent - of_child)
    said = [r.getMessage() for r in caplog.records if "run retention deleted" in r.getMessage()]
    assert said and f"and {int(counted)} large payload(s) no other run uses" in said[-1]
    # The child reads whole, its reused large output too, and its history replays.
    read = await p.api.get(run_url(wf, child))
    assert read.status_code == 200, read.text
    by_node = {n["nodeId"]: n for n in read.json()["nodeRuns"]}
    assert by_node["big"]["reusedFromNodeRunId"]
    assert by_node["big"]["outputSnapshot"]["config"] == {"v": LARGE_INPUT["pad"]}
    await replays(p, child)


async def test_deleting_a_workflow_deletes_its_runs_payloads_not_another_runs(
    platform: Platform,
) -> None:
    p = platform
    doomed, other = await p.create(FLOW), await p.create(FLOW)
    mine, theirs = await p.trigger(doomed, LARGE_INPUT), await p.trigger(other, LARGE_INPUT)
    for wf, run_id in ((doomed, mine), (other, theirs)):
        assert (await p.wait(wf, run_id))["status"] == "completed"
        await p.client.get_workflow_handle(run_id).result()
    of_mine, of_theirs = await claims(p, mine), await claims(p, theirs)
    shared = of_mine & of_theirs
    assert shared and of_mine - shared  # the echoed output is the same bytes; the inputs differ

    deleted = await p.api.delete(f"/api/v1/workflows/{doomed}")
    assert deleted.status_code == 204, deleted.text
    assert await present(p, of_mine) == of_mine  # until the sweep finds the run closed
    await FiringPayloads(
        p.client, p.store, RunMetrics(CollectorRegistry()), keep_for=timedelta(0)
    ).sweep()

    assert await present(p, of_mine) == shared
    assert await present(p, of_theirs) == of_theirs
    read = await p.api.get(run_url(other, theirs))
    assert read.status_code == 200 and read.json()["status"] == "completed"
    await replays(p, theirs)


async def test_a_deleted_workflows_run_still_open_in_temporal_keeps_its_payloads_till_closed(
    platform: Platform,
) -> None:
    # The store shows the workflow deleted while Temporal still has a run open (one that
    # outlived the delete's wait for its cancel): replayed, it decodes its input and outputs.
    p = platform
    wf = await p.create(HELD)
    run_id = await p.trigger(wf, LARGE_INPUT)
    await eventually(lambda: _node_done(p, wf, run_id, "big"))
    of_run = await claims(p, run_id)
    assert of_run  # the input at least
    assert await p.store.delete_workflow(wf) is True
    assert await present(p, of_run) == of_run

    swept = FiringPayloads(
        p.client, p.store, RunMetrics(CollectorRegistry()), keep_for=timedelta(0)
    )
    assert await swept.sweep() == (0, False)
    assert await present(p, of_run) == of_run
    await replays(p, run_id)

    await p.client.get_workflow_handle(run_id).terminate("the test closes it")
    deleted, more = await swept.sweep()  # with its activities' own (store writes)
    assert deleted >= len(of_run) and not more
    assert await present(p, of_run) == set()


async def test_a_deleted_workflows_run_storing_a_new_payload_leaves_none_behind(
    platform: Platform,
) -> None:
    # Deleted from the store while its workflow runs on: its later step's large output
    # (bytes no earlier put stored) goes with the sweep too, once Temporal closed the run.
    p = platform
    flow = {
        "nodes": [
            echo("big", v="{{ input.pad }}"),
            delay("hold", 3),
            echo("later", v="{{ input.pad }}-later"),
        ]
    }
    wf = await p.create(flow)
    run_id = await p.trigger(wf, LARGE_INPUT)
    await eventually(lambda: _node_done(p, wf, run_id, "big"))
    before = await claims(p, run_id)
    assert await p.store.delete_workflow(wf) is True
    await p.client.get_workflow_handle(run_id).result()
    of_run = await claims(p, run_id)
    assert of_run - before, "the later step's output was stored after the delete"

    deleted, more = await FiringPayloads(
        p.client, p.store, RunMetrics(CollectorRegistry()), keep_for=timedelta(0)
    ).sweep()
    assert deleted >= len(of_run) and not more
    assert await present(p, of_run) == set()


async def _node_done(p: Platform, wf: str, run_id: str, node: str) -> bool:
    read = await p.api.get(run_url(wf, run_id))
    nodes = {n["nodeId"]: n["status"] for n in read.json().get("nodeRuns", [])}
    return nodes.get(node) == "completed"


async def test_a_repeat_under_a_deleted_runs_key_leaves_no_payload_behind(
    platform: Platform,
) -> None:
    # The repeat's start stores its large input again, under the deleted run's id, before
    # Temporal refuses it (it keeps that run's closed workflow): the record it wrote is
    # taken back (409), and the payload with it.
    p = platform
    wf = await p.create(FLOW)
    body, key = {"initialInput": LARGE_INPUT}, {"Idempotency-Key": "large-1"}
    first = await p.api.post(f"/api/v1/workflows/{wf}/runs", json=body, headers=key)
    assert first.status_code == 202, first.text
    run_id = first.json()["runId"]
    assert (await p.wait(wf, run_id))["status"] == "completed"
    await p.client.get_workflow_handle(run_id).result()
    of_run = await claims(p, run_id)
    deleted, _ = await RunRetention(p.store, timedelta(0), RunMetrics(CollectorRegistry())).sweep()
    assert deleted == 1 and await present(p, of_run) == set()

    repeat = await p.api.post(f"/api/v1/workflows/{wf}/runs", json=body, headers=key)
    assert repeat.status_code == 409, repeat.text
    assert await p.store.get_run(run_id) is None
    assert await present(p, of_run) == set()
