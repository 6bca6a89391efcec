"""What an operator sees in Temporal for a pool step: the node name and the chosen agent."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import pool_step
from tests.support.platform import Platform


async def test_the_step_activity_summary_and_result_name_the_chosen_agent(
    platform: Platform,
) -> None:
    workflow_id = await platform.create(
        {"nodes": [pool_step("Create Account", ["dead-agent", "account-manager-v1"])]}
    )
    run_id = await platform.trigger(workflow_id)
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run

    history = await platform.client.get_workflow_handle(run_id).fetch_history()
    summaries: list[Any] = []
    results: list[Any] = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            summary = event.user_metadata.summary
            summaries.append(json.loads(summary.data) if summary.data else None)
        if event.HasField("activity_task_completed_event_attributes"):
            payload = event.activity_task_completed_event_attributes.result.payloads[0]
            results.append(json.loads(payload.data))

    # The summary names the agent picked before the call (dead-agent's card is down).
    [summary] = summaries
    assert summary.startswith("Create Account → account-manager-v1 (failover")
    [result] = results
    chosen = result["resolvedExecutor"]
    assert chosen["key"] == "account-manager-v1"
    assert chosen["poolIndex"] == 1
    assert "dead-agent" in chosen["reason"]
