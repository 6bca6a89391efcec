"""`GET /metrics` on the API: latency by route template and status, open gates read from the
store, open to scrapers in jwt mode, and never part of the OpenAPI document."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.store.factory import open_store
from app.api_metrics import GATES_COUNTED_EVERY_SECONDS
from tests.builders import echo
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.metrics.conftest import Metered
from tests.support.identity import jwt_settings, serve_api

REQUESTS = "trellis_http_request_duration_seconds"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


async def test_requests_are_labelled_by_route_template_never_by_their_ids(
    metered: Metered,
) -> None:
    p = metered.platform
    run = await p.run({"nodes": [echo("a")]})
    wf, run_id = run["workflowDefinitionId"], run["id"]
    assert (await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).status_code == 200
    assert (await p.api.get("/api/v1/workflows/nope")).status_code == 404
    assert (await p.api.get("/no/such/path")).status_code == 404

    text = (await p.api.get("/metrics")).text
    detail = "/api/v1/workflows/{workflow_id}/runs/{run_id}"
    count = f"{REQUESTS}_count"
    assert value(text, count, method="GET", route=detail, status="200") is not None
    assert value(text, count, method="POST", route="/api/v1/workflows", status="201") == 1
    assert value(text, count, method="GET", route="/api/v1/workflows/{workflow_id}", status="404")
    assert value(text, count, method="GET", route="unmatched", status="404") == 1
    # Workflow ids label the run metrics elsewhere; here no id of any kind appears.
    assert run_id not in text and wf not in text


async def test_open_gates_are_read_from_the_store_at_most_once_a_second(
    metered: Metered, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = metered.platform
    wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(p, wf, run_id, "send")
    counts = 0
    real = p.store.list_gated_runs

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal counts
        counts += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(p.store, "list_gated_runs", counted)
    # A minute between counts, for this part: no scrape below comes late enough for two.
    monkeypatch.setattr("app.api_metrics.GATES_COUNTED_EVERY_SECONDS", 60.0)
    await asyncio.sleep(GATES_COUNTED_EVERY_SECONDS)  # past the count of a scrape before
    waiting = (await p.api.get("/metrics")).text
    assert value(waiting, "trellis_gates_open", workflow_id=wf) == 1
    reads = counts
    assert reads > 0
    for _ in range(20):  # a flood of scrapes: no more counts of the store
        assert value((await p.api.get("/metrics")).text, "trellis_gates_open", workflow_id=wf) == 1
    assert counts == reads

    assert (await approve(p, wf, run_id, stepId="send", resolution="confirm")).status_code == 200
    await p.wait(wf, run_id)
    monkeypatch.setattr("app.api_metrics.GATES_COUNTED_EVERY_SECONDS", 0.0)
    decided = (await p.api.get("/metrics")).text
    assert value(decided, "trellis_gates_open", workflow_id=wf) == 0  # not a vanished series


async def test_a_scraper_asking_for_openmetrics_gets_it(metered: Metered) -> None:
    response = await metered.platform.api.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


async def test_metrics_are_open_in_jwt_mode_and_left_out_of_the_openapi_document(
    tmp_path: Path, temporal_env: WorkflowEnvironment
) -> None:
    settings = jwt_settings(tmp_path)
    store = open_store(settings.resolved_store_url)
    await store.connect()
    try:
        async with serve_api(settings, store, load_catalog(None), temporal_env.client) as api:
            assert (await api.get("/api/v1/workflows")).status_code == 401
            response = await api.get("/metrics")
            assert response.status_code == 200, response.text
            assert f"# TYPE {REQUESTS} histogram" in response.text
            document = (await api.get("/openapi.json")).json()
            assert "/metrics" not in document["paths"]
    finally:
        await store.close()
