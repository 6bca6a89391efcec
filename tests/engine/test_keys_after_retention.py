"""An `Idempotency-Key` whose run the run retention deleted (TRELLIS_RUN_RETENTION_DAYS)
while Temporal still keeps its closed workflow: a repeat is 409 saying so, and leaves no
run behind (it was a 202 with a run pending until the store sweep closed it)."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from activities.metrics import RunMetrics
from app.run_retention import RunRetention
from tests.builders import echo
from tests.hitl.helpers import wait_for_gate
from tests.support.cli_in_process import run_cli
from tests.support.platform import Platform

GATE = {"requiresConfirmation": True}


def runs_url(wf: str, run_id: str = "") -> str:
    return f"/api/v1/workflows/{wf}/runs" + (f"/{run_id}" if run_id else "")


async def ended_and_deleted(platform: Platform, wf: str, run_id: str) -> None:
    """Wait for the run's end (in the store and in Temporal), then let the retention delete
    every ended run (a retention of none: all that ended before now)."""
    assert (await platform.wait(wf, run_id))["status"] == "completed"
    await platform.client.get_workflow_handle(run_id).result()
    retention = RunRetention(platform.store, timedelta(0), RunMetrics(CollectorRegistry()))
    deleted, _ = await retention.sweep()
    assert deleted >= 1
    assert (await platform.api.get(runs_url(wf, run_id))).status_code == 404


async def listed(platform: Platform, wf: str) -> list[str]:
    page = await platform.api.get(runs_url(wf))
    assert page.status_code == 200, page.text
    return [run["id"] for run in page.json()["runs"]]


def assert_deleted_key_conflict(answer: Any, run_id: str) -> None:
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "conflict"
    message = error["message"]
    assert run_id in message and "no longer in the store" in message, message
    assert "TRELLIS_RUN_RETENTION_DAYS" in message and "new key" in message, message


async def test_a_trigger_repeated_under_the_key_of_a_deleted_run_is_409_and_records_none(
    platform: Platform,
) -> None:
    wf = await platform.create({"nodes": [echo("a")]})
    body, key = {"initialInput": {"n": 1}}, {"Idempotency-Key": "nightly-1"}
    first = await platform.api.post(runs_url(wf), json=body, headers=key)
    assert first.status_code == 202, first.text
    run_id = first.json()["runId"]
    await ended_and_deleted(platform, wf, run_id)
    assert await listed(platform, wf) == []

    for _ in range(2):  # and again: the first repeat left nothing a second one finds
        repeat = await platform.api.post(runs_url(wf), json=body, headers=key)
        assert_deleted_key_conflict(repeat, run_id)
        assert (await platform.api.get(runs_url(wf, run_id))).status_code == 404
        assert await platform.store.get_run(run_id) is None
        assert await listed(platform, wf) == []

    # The CLI's `runs start` under the key (the same request) prints the API's 409, exit 1.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    env["TRELLIS_URL"] = str(platform.api.base_url)
    args = ("runs", "start", wf, "--input", "n=1", "--idempotency-key", "nightly-1")
    cli = await asyncio.to_thread(run_cli, args, env)
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert f"409 conflict: Idempotency-Key was used for run {run_id}" in cli.stderr, cli.stderr
    assert await listed(platform, wf) == []

    fresh = await platform.api.post(runs_url(wf), json=body, headers={"Idempotency-Key": "new"})
    assert fresh.status_code == 202, fresh.text
    assert fresh.json()["runId"] != run_id
    assert (await platform.wait(wf, fresh.json()["runId"]))["status"] == "completed"
    assert await listed(platform, wf) == [fresh.json()["runId"]]


async def test_a_replay_repeated_under_the_key_of_its_deleted_child_is_409_and_records_none(
    platform: Platform,
) -> None:
    # The source waits at a gate (open: the retention keeps it); its replay runs the live
    # definition, edited to end at once, so only the child is deleted.
    wf = await platform.create({"nodes": [echo("send", GATE)]})
    source = await platform.trigger(wf)
    await wait_for_gate(platform, wf, source, "send")
    edited = await platform.api.put(f"/api/v1/workflows/{wf}", json={"nodes": [echo("a")]})
    assert edited.status_code == 200, edited.text
    url, key = runs_url(wf, source) + "/replay", {"Idempotency-Key": "replay-1"}
    first = await platform.api.post(url, headers=key)
    assert first.status_code == 202, first.text
    child = first.json()["runId"]
    await ended_and_deleted(platform, wf, child)
    assert await listed(platform, wf) == [source]

    repeat = await platform.api.post(url, headers=key)
    assert_deleted_key_conflict(repeat, child)
    assert (await platform.api.get(runs_url(wf, child))).status_code == 404
    assert await platform.store.get_run(child) is None
    assert await listed(platform, wf) == [source]
    children = await platform.api.get(runs_url(wf, source) + "/children")
    assert children.json()["runs"] == []

    fresh = await platform.api.post(url, headers={"Idempotency-Key": "replay-2"})
    assert fresh.status_code == 202, fresh.text
    assert (await platform.wait(wf, fresh.json()["runId"]))["status"] == "completed"
