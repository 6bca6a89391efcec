"""GET /api/v1/runs/{runId}: a run by its id alone."""

from __future__ import annotations

from tests.builders import echo, workflow
from tests.support.platform import Platform


async def test_a_run_is_found_by_its_id_alone(platform: Platform) -> None:
    workflow_id = await platform.create(workflow("lookup", echo("a")))
    run_id = await platform.trigger(workflow_id)
    await platform.wait(workflow_id, run_id)
    found = await platform.api.get(f"/api/v1/runs/{run_id}")
    nested = await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
    assert found.status_code == 200
    assert found.json() == nested.json()


async def test_an_unknown_run_id_is_a_404(platform: Platform) -> None:
    response = await platform.api.get("/api/v1/runs/run-unknown")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "resource_not_found"


async def test_a_malformed_run_id_is_a_400(platform: Platform) -> None:
    response = await platform.api.get("/api/v1/runs/-bad%20id")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
