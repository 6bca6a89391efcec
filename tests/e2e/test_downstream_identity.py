"""Downstream identity end to end: a user triggers a run through the API in `jwt` mode; its
MCP step, run after an approval, presents the real MCP server a token for that user minted
after the approval (not at trigger time). Runs triggered in dev mode send none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.executors.registry import ExecutorRegistry
from tests.builders import step
from tests.hitl.helpers import approve, wait_for_gate
from tests.peers.catalog import Peers
from tests.support.identity import SECRET, as_user
from tests.support.platform import Platform, running_platform
from tests.support.service_tokens import verified


@pytest.fixture
async def alice(
    temporal_env: WorkflowEnvironment, tmp_path: Path, peer_registry: ExecutorRegistry
) -> AsyncIterator[Platform]:
    """The platform in `jwt` mode; its client calls as Alice."""
    async with running_platform(
        temporal_env.client,
        tmp_path,
        peer_registry,
        settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
        headers=as_user("alice", name="Alice"),
    ) as platform:
        yield platform


def token_of_run(peers: Peers, run_id: str) -> dict[str, object]:
    """The claims of the last tools/call request a step of `run_id` made."""
    for request in reversed(peers.mcp_requests.seen("tools/call")):
        header = request.headers.get("authorization")
        if header and verified(header)["trellis"]["runId"] == run_id:
            return verified(header)
    raise AssertionError(f"no tools/call of run {run_id} carried a token")


async def test_a_step_after_an_approval_carries_a_token_minted_after_it(
    alice: Platform, peers: Peers
) -> None:
    gate = step("Add", "peer-http/add", {"a": "{{ a }}", "b": 3}, id="add")
    gate["humanReview"] = {"requiresConfirmation": True}
    workflow_id = await alice.create({"nodes": [gate]})
    triggered = time.time()
    run_id = await alice.trigger(workflow_id, {"a": 2})
    await wait_for_gate(alice, workflow_id, run_id, "add")
    await asyncio.sleep(1.5)  # the approval comes later than the trigger
    approved = time.time()
    decided = await approve(alice, workflow_id, run_id, stepId="add", resolution="confirm")
    assert decided.status_code == 200, decided.text
    run = await alice.wait(workflow_id, run_id)
    assert run["status"] == "completed", run
    claims = token_of_run(peers, run_id)
    assert claims["sub"] == "alice" and claims["name"] == "Alice"
    assert "workflows-control" in str(claims["scope"]).split()
    assert int(claims["iat"]) >= int(approved) > triggered  # type: ignore[call-overload]
    assert claims["auth_time"] <= approved  # type: ignore[operator]
    assert claims["trellis"]["nodeId"] == "add"  # type: ignore[index]


async def test_a_run_triggered_in_dev_mode_sends_no_token(platform: Platform, peers: Peers) -> None:
    before = len(peers.mcp_requests.seen("tools/call"))
    run = await platform.run({"nodes": [step("Add", "peer-http/add", {"a": 1, "b": 3})]})
    assert run["status"] == "completed", run
    calls = peers.mcp_requests.seen("tools/call")[before:]
    assert calls and all("authorization" not in c.headers for c in calls)
