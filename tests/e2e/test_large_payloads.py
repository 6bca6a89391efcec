"""Payloads of 10 MB end to end: kept in the store (a claim check), not in Temporal history."""

from __future__ import annotations

from typing import Any

from tests.builders import step
from tests.e2e.helpers import node_runs
from tests.support.platform import Platform

TEN_MB = 10_000_000
# Temporal refuses a payload over 2 MB; a history holding a 10 MB one could not exist.
SMALL_HISTORY_BYTES = 1_000_000


def _transform(name: str, **mapping: str) -> dict[str, Any]:
    return {
        "name": name,
        "nodeType": "step",
        "executorKey": "builtin:transform",
        "config": {"map": mapping},
    }


async def _history_bytes(platform: Platform, run_id: str) -> int:
    history = await platform.client.get_workflow_handle(run_id).fetch_history()
    return len(history.to_json())


async def test_a_ten_mb_run_input_reaches_its_steps_and_comes_back(platform: Platform) -> None:
    blob = "y" * TEN_MB
    definition = {
        "nodes": [_transform("measure", n="size(input.blob)", head="input.blob.startsWith('yyy')")]
    }
    workflow_id = await platform.create(definition)
    run_id = await platform.trigger(workflow_id, {"blob": blob})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {"n": TEN_MB, "head": True}
    assert run["initialInput"]["blob"] == blob
    assert await _history_bytes(platform, run_id) < SMALL_HISTORY_BYTES


async def test_a_ten_mb_tool_result_feeds_the_next_step_through_a_template(
    platform: Platform,
) -> None:
    definition = {
        "nodes": [
            step("Big", "peer-http/large", {"size": TEN_MB}),
            _transform("Read", n="size(previous_step_content.text)"),
            {
                "name": "Quote",
                "nodeType": "step",
                "executorKey": "builtin:echo",
                "config": {"size": "{{ previous_step_outputs.Big.size }}"},
            },
        ]
    }
    workflow_id = await platform.create(definition)
    run_id = await platform.trigger(workflow_id)
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "completed", run["errorSummary"]
    big = node_runs(run)["Big"]["outputSnapshot"]
    assert big["size"] == TEN_MB and len(big["text"]) == TEN_MB
    assert node_runs(run)["Read"]["outputSnapshot"] == {"n": TEN_MB}
    assert run["finalOutput"]["config"] == {"size": TEN_MB}
    assert await _history_bytes(platform, run_id) < SMALL_HISTORY_BYTES


async def test_a_step_output_over_the_payload_limit_fails_the_step_clearly(
    platform: Platform,
) -> None:
    # The platform's limit is the default, 16 MiB.
    run = await platform.run({"nodes": [step("Huge", "peer-http/large", {"size": 17_000_000})]})
    assert run["status"] == "failed"
    assert "the limit is 16777216 bytes" in run["errorSummary"]
    # The call went through: the node run says where, as any failed attempt's does.
    (huge,) = run["nodeRuns"]
    assert huge["resolvedExecutor"] == {
        "kind": "mcp",
        "key": "peer-http/large",
        "server": "peer-http",
        "tool": "large",
    }


async def test_a_step_output_of_too_many_values_fails_the_step_at_once(
    platform: Platform,
) -> None:
    # A million zeros (3 MB, within the byte limit): the workflow decoding the step's
    # result ran past Temporal's 2 s in every task and the run never ended.
    big = step("Many", "peer-http/many", {"count": 1_000_000}, stepConfig={"maxRetries": 3})
    run = await platform.run({"nodes": [big]})
    assert run["status"] == "failed", run["status"]
    assert run["errorSummary"] == (
        "Node 'Many' failed: step output holds more than 100000 JSON values"
    ), run["errorSummary"]
    (many,) = run["nodeRuns"]
    assert many["attempt"] == 1 and many["outputSnapshot"] is None  # not retried
    # Within the limit, the same tool's output runs on.
    fits = step("Fits", "peer-http/many", {"count": 99_998})
    run = await platform.run({"nodes": [fits]})
    assert run["status"] == "completed", run["errorSummary"]
    assert len(run["finalOutput"]["values"]) == 99_998


async def test_a_step_evaluated_in_the_workflow_has_the_same_value_limit(
    platform: Platform,
) -> None:
    # builtin:echo answers its config and the run's input: each is within the limit,
    # the two together are not.
    echo = {
        "name": "Echo",
        "nodeType": "step",
        "executorKey": "builtin:echo",
        "config": {"a": [0] * 60_000},
    }
    workflow_id = await platform.create({"nodes": [echo]})
    run_id = await platform.trigger(workflow_id, {"b": [0] * 60_000})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "failed", run["status"]
    assert run["errorSummary"] == (
        "Node 'Echo' failed: step output holds more than 100000 JSON values"
    ), run["errorSummary"]


async def test_a_step_evaluated_in_the_workflow_has_the_same_output_limit(
    platform: Platform,
) -> None:
    # builtin:echo runs in the workflow, not in an activity, and answers the run's input:
    # 17 MB is within the body limit (16 MiB + 1 MiB) and over the output limit (16 MiB).
    blob = "z" * 17_000_000
    echo = {"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo", "config": {}}
    workflow_id = await platform.create({"nodes": [echo]})
    run_id = await platform.trigger(workflow_id, {"blob": blob})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "failed"
    assert "the limit is 16777216 bytes" in run["errorSummary"], run["errorSummary"]
    (echoed,) = run["nodeRuns"]
    assert echoed["status"] == "failed" and echoed["outputSnapshot"] is None


async def test_a_container_output_over_the_limit_fails_the_container(
    platform: Platform,
) -> None:
    # Each item's echo (6 MB) is within the limit; the map's list of three is not. A
    # map of many large outputs made one so large that recording it ran past the
    # workflow task's 2 s, and the run hung for good.
    echo = {"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo", "config": {}}
    fan = {
        "name": "Fan",
        "nodeType": "map",
        "itemsCel": "[1, 2, 3]",
        "children": [echo],
    }
    workflow_id = await platform.create({"nodes": [fan, _transform("After", v="1")]})
    run_id = await platform.trigger(workflow_id, {"blob": "z" * 6_000_000})
    run = await platform.wait(workflow_id, run_id, within=60)
    assert run["status"] == "failed", run["status"]
    assert run["errorSummary"] == (
        "Node 'Fan' failed: output is over the limit of 16777216 bytes of JSON"
    ), run["errorSummary"]
    by_name = node_runs(run)
    assert by_name["Fan"]["status"] == "failed" and by_name["Fan"]["outputSnapshot"] is None
    assert "After" not in by_name
