"""A failed `builtin:http` step's error keeps the URL's query values (and a user name written
alone, a token often) out of the run's record and events: masked there as in logs and spans."""

from __future__ import annotations

import json

import pytest

from tests.builders import step
from tests.events.sse import read_all
from tests.support.platform import Platform
from tests.support.server import free_port

SECRET = "s3cret-query-token"


@pytest.mark.parametrize(
    "target", ["answers 500", "refuses connections", "answers 500, a token as user name"]
)
async def test_a_failed_http_step_keeps_its_query_token_out_of_the_run(
    platform: Platform, target: str
) -> None:
    shown = "token=***"
    if target == "answers 500":
        url = f"{platform.peer_url}/status/500?token={SECRET}&page=2"
    elif target == "refuses connections":
        url = f"http://127.0.0.1:{free_port()}/hook?token={SECRET}"
    else:
        url = platform.peer_url.replace("://", f"://{SECRET}@") + "/status/500"
        shown = "http://***@127.0.0.1"
    config = {"url": url, "method": "POST"}
    wf = await platform.create(
        {"nodes": [step("Call", "builtin:http", config, stepConfig={"maxRetries": 0})]}
    )
    run_id = await platform.trigger(wf)
    run = await platform.wait(wf, run_id)
    events = await read_all(platform.api, f"/api/v1/workflows/{wf}/runs/{run_id}/events")

    assert run["status"] == "failed", run
    (node_run,) = run["nodeRuns"]
    assert shown in node_run["error"], node_run["error"]
    assert "127.0.0.1" in node_run["error"]  # still says where it went
    assert shown in run["errorSummary"], run["errorSummary"]
    # The config as the author wrote it (the definition, the step's input) is theirs to show
    # to whoever may read the workflow; everything the failure wrote is masked.
    run.pop("definitionSnapshot")
    node_run.pop("inputSnapshot")
    assert SECRET not in json.dumps(run)
    logged = json.dumps([m.data for m in events])
    assert "node_failed" in logged and SECRET not in logged
