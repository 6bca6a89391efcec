"""Every step execution carries its idempotency key: the node-run id, on every attempt.

MCP tools get it in the request's `_meta`, A2A agents in the message metadata,
`builtin:http` targets in an `Idempotency-Key` header (tests/engine/test_http_steps.py).
"""

from __future__ import annotations

import uuid
from importlib.metadata import version

from activities.executors.base import IDEMPOTENCY_META_KEY
from tests.builders import retries, step
from tests.e2e.helpers import node_runs
from tests.peers.catalog import Peers
from tests.support.platform import Platform

CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"


async def test_an_mcp_call_carries_the_node_runs_key_in_meta(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Meta", "peer-http/request_meta")]})

    assert run["status"] == "completed", run
    meta = node_runs(run)["Meta"]["outputSnapshot"]
    node_run_id = node_runs(run)["Meta"]["id"]
    assert meta[IDEMPOTENCY_META_KEY] == node_run_id
    assert meta["trellis/runId"] == run["id"]
    assert meta["trellis/nodeRunId"] == node_run_id
    assert meta["trellis/attempt"] == 1


async def test_the_mcp_client_introduces_itself_as_trellis(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Meta", "peer-http/request_meta")]})

    meta = node_runs(run)["Meta"]["outputSnapshot"]
    assert meta[CLIENT_INFO_META_KEY] == {"name": "trellis", "version": version("trellis")}


async def test_every_attempt_of_a_node_run_sends_the_same_key(
    platform: Platform, peers: Peers
) -> None:
    # The tool fails the first two calls of a key: only a key that stays the same across
    # attempts lets the third attempt through.
    target = f"target-{uuid.uuid4().hex}"
    run = await platform.run(
        {
            "nodes": [
                step(
                    "Effect",
                    "peer-http/apply_effect",
                    {"target": target, "failures": 2},
                    stepConfig=retries(3),
                ),
            ]
        }
    )

    assert run["status"] == "completed", run
    effect = node_runs(run)["Effect"]
    assert effect["attempt"] == 3
    assert effect["outputSnapshot"] == {"target": target, "key": effect["id"]}
    assert peers.mcp_stats.effect_calls[effect["id"]] == 3
    assert peers.mcp_stats.effects[effect["id"]] == 1


async def test_an_a2a_message_carries_the_key_in_its_metadata(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Onboard", "account-creator-v2", {"plan": "pro"})]})

    assert run["status"] == "completed", run
    onboard = node_runs(run)["Onboard"]
    metadata = onboard["outputSnapshot"]["metadata"]
    assert metadata[IDEMPOTENCY_META_KEY] == onboard["id"]
    assert metadata["trellis/runId"] == run["id"]
