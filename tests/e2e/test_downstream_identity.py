"""A run triggered by a user: its MCP step, run after an approval, presents the real MCP
server a token for that user minted after the approval, not at trigger time."""

from __future__ import annotations

import asyncio
import time

from activities.run_start import new_run_record, run_search_attributes
from temporal_workflows.contracts import WORKFLOW_TYPE, Identity, RunInput
from tests.builders import step
from tests.hitl.helpers import approve, wait_for_gate
from tests.peers.catalog import Peers
from tests.support.platform import Platform
from tests.support.service_tokens import verified

ALICE = Identity(user_id="alice", username="Alice", scopes=["workflows-control"])


async def trigger_as(platform: Platform, workflow_id: str, identity: Identity) -> str:
    """Start a run that `identity` triggered: its record, then TrellisRun with the identity
    in its input (what the trigger path does for a verified caller)."""
    workflow = await platform.store.get_workflow(workflow_id)
    assert workflow is not None
    record = await platform.store.insert_run(new_run_record(workflow, "manual", {"a": 2}))
    run_input = RunInput(
        run_id=record.id,
        workflow_id=workflow_id,
        workflow_version=record.workflow_version,
        definition=record.definition_snapshot,
        initial_input=record.initial_input,
        triggered_by=identity,
    )
    await platform.client.start_workflow(
        WORKFLOW_TYPE,
        run_input,
        id=record.id,
        task_queue=platform.task_queue,
        search_attributes=run_search_attributes(record),
    )
    return record.id


async def test_a_step_after_an_approval_carries_a_token_minted_after_it(
    platform: Platform, peers: Peers
) -> None:
    gate = step("Add", "peer-http/add", {"a": "{{ a }}", "b": 3}, id="add")
    gate["humanReview"] = {"requiresConfirmation": True}
    workflow_id = await platform.create({"nodes": [gate]})
    triggered = time.time()
    run_id = await trigger_as(platform, workflow_id, ALICE)
    await wait_for_gate(platform, workflow_id, run_id, "add")
    await asyncio.sleep(1.5)  # the approval comes later than the trigger
    approved = time.time()
    decided = await approve(platform, workflow_id, run_id, stepId="add", resolution="confirm")
    assert decided.status_code == 200, decided.text
    run = await platform.wait(workflow_id, run_id)
    assert run["status"] == "completed", run
    call = next(
        r
        for r in reversed(peers.mcp_requests.seen("tools/call"))
        if r.headers.get("authorization")
        and verified(r.headers["authorization"])["trellis"]["runId"] == run_id
    )
    claims = verified(call.headers["authorization"])
    assert claims["sub"] == "alice" and claims["scope"] == "workflows-control"
    assert claims["iat"] >= int(approved) > triggered
    assert claims["trellis"]["nodeId"] == "add"


async def test_a_run_without_a_triggering_identity_sends_no_token(
    platform: Platform, peers: Peers
) -> None:
    before = len(peers.mcp_requests.seen("tools/call"))
    run = await platform.run({"nodes": [step("Add", "peer-http/add", {"a": 1, "b": 3})]})
    assert run["status"] == "completed", run
    calls = peers.mcp_requests.seen("tools/call")[before:]
    assert calls and all("authorization" not in c.headers for c in calls)
