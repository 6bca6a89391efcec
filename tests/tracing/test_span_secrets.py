"""A request span's URL attributes are masked as the access log masks them: a token whose
name or separator is percent-encoded too."""

from __future__ import annotations

import json
import uuid

import pytest

from app.span_secrets import URL_ATTRIBUTES
from tests.builders import retries, step
from tests.tracing.conftest import Traced

SECRET = "s3cr3t-v4lue"


@pytest.mark.parametrize("query", [f"%74oken={SECRET}", f"limit=5&password%3D{SECRET}"])
async def test_a_percent_encoded_token_is_masked_in_the_request_span(
    traced: Traced, query: str
) -> None:
    response = await traced.platform.api.get(f"/api/v1/workflows?{query}")
    assert response.status_code == 200

    attributes = [
        {key: span.attributes[key] for key in URL_ATTRIBUTES if key in span.attributes}
        for span in traced.spans()
        if span.attributes
    ]
    shown = json.dumps([a for a in attributes if a])
    assert "***" in shown
    assert SECRET not in shown


async def test_a_tool_errors_secrets_are_masked_in_every_span_of_the_failed_run(
    traced: Traced,
) -> None:
    # Found by an audit: masked in the worker's log line, raw in the tool call's status and
    # in `exception.message` of `RunActivity:execute_step` and `CompleteWorkflow`.
    key = f"password=hunter2 Bearer abc.def.ghi {uuid.uuid4().hex}"
    config = {"key": key, "failures": 99}
    nodes = [step("Boom", "peer-http/flaky", config, id="boom", stepConfig=retries(0))]
    workflow_id = await traced.platform.create({"nodes": nodes})
    run = await traced.platform.wait(workflow_id, await traced.platform.trigger(workflow_id))
    assert run["status"] == "failed", run

    spans = traced.spans()
    [call] = [s for s in spans if s.name == "tools/call flaky"]
    assert call.status.description is not None and "password=***" in call.status.description
    messages = [
        str((event.attributes or {}).get("exception.message"))
        for span in spans
        for event in span.events
        if event.name == "exception"
    ]
    assert any("Bearer ***" in message for message in messages), messages
    shown = json.dumps(
        [
            [s.name, s.status.description, dict(s.attributes or {})]
            + [dict(e.attributes or {}) for e in s.events]
            for s in spans
        ],
        default=str,
    )
    assert "hunter2" not in shown and "abc.def.ghi" not in shown
