"""stepConfig: retries with backoff, onError, permanent errors, per-attempt timeouts."""

import asyncio
import logging
import re
import time
from datetime import datetime

import pytest

from tests.builders import http_step, retries
from tests.support.platform import Platform


async def test_retries_until_the_step_succeeds(platform: Platform) -> None:
    url = f"{platform.peer_url}/flaky/r1?failures=2"
    run = await platform.run({"nodes": [http_step("flaky", url, stepConfig=retries(2))]})
    assert run["status"] == "completed", run
    node = run["nodeRuns"][0]
    assert node["attempt"] == 3 and node["error"] is None
    assert platform.peer.calls["r1"] == 3


async def test_a_failed_attempt_is_logged_once_in_one_line(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    # Temporal's SDK logged each one again at WARNING with a 25-60 line traceback (a
    # soak: 29 % of the platform's log lines); the step's own line says it all.
    caplog.set_level(logging.DEBUG)
    url = f"{platform.peer_url}/flaky/r1c?failures=1"
    run = await platform.run({"nodes": [http_step("flaky", url, stepConfig=retries(1))]})
    assert run["status"] == "completed", run
    ours = [r for r in caplog.records if "step 'flaky' attempt 1 failed" in r.getMessage()]
    assert len(ours) == 1 and ours[0].levelno == logging.WARNING and ours[0].exc_info is None
    again = [
        r
        for r in caplog.records
        if r.getMessage().startswith("Completing activity as failed") and r.levelno >= logging.INFO
    ]
    assert again == []


async def test_a_retried_steps_node_run_keeps_its_first_attempts_start(
    platform: Platform,
) -> None:
    # Each attempt wrote its own start: a step retried for seconds read as a few
    # milliseconds long, started after its first attempt had failed.
    url = f"{platform.peer_url}/flaky/r1b?failures=2"
    config = {"maxRetries": 2, "backoffBaseSeconds": 0.2, "backoffMaxSeconds": 0.2}
    run = await platform.run({"nodes": [http_step("flaky", url, stepConfig=config)]})
    assert run["status"] == "completed", run
    (node,) = run["nodeRuns"]
    assert node["attempt"] == 3
    events = await platform.store.list_events(run["id"], 0, 100)
    starts = [e["timestamp"] for e in events if e["type"] == "node_started"]
    assert len(starts) == 3
    assert node["startedAt"] <= starts[0], (node, starts)
    took = datetime.fromisoformat(node["finishedAt"]) - datetime.fromisoformat(node["startedAt"])
    assert took >= datetime.fromisoformat(starts[2]) - datetime.fromisoformat(starts[0]), took


async def test_the_run_fails_after_the_last_attempt(platform: Platform) -> None:
    url = f"{platform.peer_url}/flaky/r2?failures=5"
    run = await platform.run(
        {
            "nodes": [
                http_step("flaky", url, stepConfig=retries(1)),
                http_step("after", f"{platform.peer_url}/echo/a2"),
            ]
        }
    )
    assert run["status"] == "failed"
    assert run["errorSummary"].startswith("Node 'flaky' failed: POST ")
    assert "503" in run["errorSummary"]
    assert [n["status"] for n in run["nodeRuns"]] == ["failed"]
    assert run["nodeRuns"][0]["attempt"] == 2
    assert platform.peer.calls["r2"] == 2 and platform.peer.calls["a2"] == 0


async def test_on_error_skip_marks_the_node_skipped_and_goes_on(platform: Platform) -> None:
    url = f"{platform.peer_url}/flaky/r3?failures=5"
    run = await platform.run(
        {
            "nodes": [
                http_step("optional", url, stepConfig=retries(0, "skip")),
                http_step("after", f"{platform.peer_url}/echo/a3"),
            ]
        }
    )
    assert run["status"] == "completed", run
    skipped, after = run["nodeRuns"]
    assert skipped["status"] == "skipped" and "503" in skipped["error"]
    assert after["status"] == "completed"


async def test_on_error_retry_retries_three_times_when_max_retries_is_unset(
    platform: Platform,
) -> None:
    url = f"{platform.peer_url}/flaky/r4?failures=3"
    run = await platform.run({"nodes": [http_step("flaky", url, stepConfig=retries(0, "retry"))]})
    assert run["status"] == "completed"
    assert platform.peer.calls["r4"] == 4


async def test_a_permanent_error_is_not_retried(platform: Platform) -> None:
    run = await platform.run(
        {"nodes": [http_step("bad", f"{platform.peer_url}/status/422", stepConfig=retries(3))]}
    )
    assert run["status"] == "failed"
    assert run["nodeRuns"][0]["attempt"] == 1
    assert platform.peer.calls["status-422"] == 1


async def test_a_permanent_failure_is_logged_with_its_attempt_and_as_final(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    # It said `step 'bad' failed for good: …`, without the attempt docs/operations.md names.
    caplog.set_level(logging.INFO)
    url = f"{platform.peer_url}/status/422"
    run = await platform.run({"nodes": [http_step("bad", url, stepConfig=retries(3))]})
    assert run["status"] == "failed"
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step 'bad'")]
    assert line.startswith("step 'bad' attempt 1 failed for good (not retried): "), line


async def test_a_step_over_its_timeout_fails_the_attempt(platform: Platform) -> None:
    run = await platform.run(
        {
            "nodes": [
                {
                    "name": "sleepy",
                    "nodeType": "step",
                    "executorKey": "builtin:delay",
                    "config": {"seconds": 5},
                    # Time for the attempt's first heartbeat to reach Temporal on a busy box.
                    "stepConfig": {"timeoutSeconds": 1},
                }
            ]
        }
    )
    assert run["status"] == "failed"
    # The limit and what the attempt's heartbeats said it waited for: the workflow said
    # only "step timed out (start-to-close)", and the node run named no executor.
    assert run["errorSummary"] == (
        "Node 'sleepy' failed: step timed out (start-to-close, timeoutSeconds 1)"
        " waiting for builtin:delay"
    )
    assert run["nodeRuns"][0]["resolvedExecutor"] == {"kind": "builtin", "key": "builtin:delay"}


async def test_a_timed_out_attempt_is_a_failed_attempt_not_a_cancelled_node(
    platform: Platform,
) -> None:
    """Temporal timing an attempt out cancels it on the worker; the run was not cancelled,
    so the log says no `node_cancelled` and the attempt's error says what happened."""
    sleepy = {
        "name": "sleepy",
        "nodeType": "step",
        "executorKey": "builtin:delay",
        "config": {"seconds": 5},
        "stepConfig": {"timeoutSeconds": 0.5, "maxRetries": 1, "backoffBaseSeconds": 0.1},
    }
    workflow_id = await platform.create({"nodes": [sleepy]})
    run_id = await platform.trigger(workflow_id)
    seen: set[tuple[str, int, str | None]] = set()
    while True:  # the node run while the run goes on, attempt by attempt
        run = (await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")).json()
        seen |= {(n["status"], n["attempt"], n["error"]) for n in run["nodeRuns"]}
        if run["status"] in {"completed", "failed", "cancelled"}:
            break
        await asyncio.sleep(0.05)
    events = await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events")

    assert run["status"] == "failed", run
    assert "event: node_cancelled" not in events.text.splitlines(), events.text
    assert not any(status == "cancelled" for status, _, _ in seen), seen


async def test_a_delay_cut_off_by_its_timeout_sleeps_only_what_is_left_next_attempt(
    platform: Platform,
) -> None:
    # Its second attempt slept the whole 3 s again, past its 2 s timeout: no attempt of a
    # delay longer than its timeout could ever end.
    run = await platform.run(
        {
            "nodes": [
                {
                    "name": "wait",
                    "nodeType": "step",
                    "executorKey": "builtin:delay",
                    "config": {"seconds": 3},
                    "stepConfig": {"timeoutSeconds": 2, "maxRetries": 1, "backoffBaseSeconds": 1},
                }
            ]
        }
    )
    assert run["status"] == "completed", run
    [wait] = run["nodeRuns"]
    assert wait["attempt"] == 2 and wait["outputSnapshot"] == {"sleptSeconds": 3}
    took = datetime.fromisoformat(wait["finishedAt"]) - datetime.fromisoformat(wait["startedAt"])
    assert took.total_seconds() < 5.5


async def test_a_step_cancelled_between_attempts_keeps_its_last_attempts_error(
    platform: Platform,
) -> None:
    # Cancelled while Temporal waited to retry it, the node run said only `cancelled`:
    # the error of the attempt that kept it retrying was written over.
    url = f"{platform.peer_url}/flaky/between?failures=100"
    config = {"maxRetries": 5, "backoffBaseSeconds": 60, "backoffMaxSeconds": 60}
    workflow_id = await platform.create({"nodes": [http_step("flaky", url, stepConfig=config)]})
    run_id = await platform.trigger(workflow_id)
    path = f"/api/v1/workflows/{workflow_id}/runs/{run_id}"
    for _ in range(200):  # until the first attempt's error shows: the backoff has begun
        (node,) = (await platform.api.get(path)).json()["nodeRuns"] or [None]
        if node is not None and node["error"]:
            break
        await asyncio.sleep(0.05)
    assert node is not None and node["status"] == "running" and "503" in node["error"], node
    failed_with = node["error"]

    assert (await platform.api.post(f"{path}/cancel")).status_code == 200
    run = await platform.wait(workflow_id, run_id)

    assert run["status"] == "cancelled", run
    (node,) = run["nodeRuns"]
    assert node["status"] == "cancelled" and node["attempt"] == 1, node
    assert node["error"] == f"cancelled (its last attempt failed: {failed_with})", node
    assert platform.peer.calls["between"] == 1


async def test_an_attempt_whose_heartbeat_timed_out_says_so(platform: Platform) -> None:
    # The worker's loop blocked (a stalled process, an executor doing blocking work) past
    # the step's 5 s heartbeat timeout: Temporal timed the attempt out, and the node run
    # said only "Temporal ended the attempt before it finished (timed out, or the run
    # closed)", though the worker could tell which timeout it was.
    sleepy = {
        "name": "sleepy",
        "nodeType": "step",
        "executorKey": "builtin:delay",
        "config": {"seconds": 30},
        "stepConfig": {"timeoutSeconds": 15, "maxRetries": 1, "backoffBaseSeconds": 60},
    }
    workflow_id = await platform.create({"nodes": [sleepy]})
    run_id = await platform.trigger(workflow_id)
    path = f"/api/v1/workflows/{workflow_id}/runs/{run_id}"
    for _ in range(200):  # until the attempt shows running
        nodes = (await platform.api.get(path)).json()["nodeRuns"]
        if nodes and nodes[0]["status"] == "running":
            break
        await asyncio.sleep(0.05)
    time.sleep(6.5)  # noqa: ASYNC251  (blocks the worker's loop, this one: no heartbeats)
    for _ in range(100):  # until the attempt hears Temporal timed it out
        (node,) = (await platform.api.get(path)).json()["nodeRuns"]
        if node["error"]:
            break
        await asyncio.sleep(0.05)

    assert node["status"] == "running" and node["attempt"] == 1, node  # waiting to retry
    assert re.fullmatch(
        r"step timed out \(heartbeat\): no heartbeat for [67] s \(heartbeat timeout 5 s\)",
        node["error"],
    ), node
    await platform.api.post(f"{path}/cancel")
    (ended,) = (await platform.wait(workflow_id, run_id))["nodeRuns"]
    assert ended["error"] == f"cancelled (its last attempt failed: {node['error']})", ended
