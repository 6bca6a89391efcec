"""`builtin:http` sends the step's idempotency key (its node-run id) as `Idempotency-Key`."""

from __future__ import annotations

import uuid

from tests.builders import step
from tests.support.platform import Platform


async def test_an_http_step_sends_its_node_run_id_as_idempotency_key(platform: Platform) -> None:
    url = f"{platform.peer_url}/echo/{uuid.uuid4().hex}"
    run = await platform.run({"nodes": [step("Call", "builtin:http", {"url": url})]})

    assert run["status"] == "completed", run
    called = run["nodeRuns"][0]
    assert called["outputSnapshot"]["body"]["idempotencyKey"] == called["id"]


async def test_a_key_set_in_the_config_is_sent_as_written(platform: Platform) -> None:
    url = f"{platform.peer_url}/echo/{uuid.uuid4().hex}"
    config = {"url": url, "headers": {"idempotency-key": "order-42"}}
    run = await platform.run({"nodes": [step("Call", "builtin:http", config)]})

    assert run["status"] == "completed", run
    assert run["nodeRuns"][0]["outputSnapshot"]["body"]["idempotencyKey"] == "order-42"
