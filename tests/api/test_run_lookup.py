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


async def test_every_id_in_a_path_is_checked_before_any_is_looked_up(platform: Platform) -> None:
    # Under a workflow that does not exist, a malformed run, node run or node id was the
    # workflow's 404: the malformed id is the request's fault, whichever comes first.
    unknown = "/api/v1/workflows/0c0ffee0-0000-4000-8000-000000000000"
    known = await platform.create(workflow("ids", echo("a")))
    for base in (unknown, f"/api/v1/workflows/{known}"):
        for method, path, says in (
            ("GET", "/runs/bad!", "Invalid run id 'bad!'"),
            ("POST", "/runs/bad!/retry", "Invalid run id 'bad!'"),
            ("POST", "/runs/run-x/nodes/bad!/rerun", "Invalid node id 'bad!'"),
            ("GET", "/runs/run-x/nodes/bad!", "Invalid node run id 'bad!'"),
            ("GET", "/runs/-x/nodes/bad!", "Invalid run id '-x'"),  # the first of two
            ("DELETE", "/schedules/bad!", "Invalid schedule id 'bad!'"),
        ):
            response = await platform.api.request(method, base + path)
            assert response.status_code == 400, (base, path, response.text)
            assert says in response.json()["error"]["message"], response.text
    # Well-formed, under an unknown workflow: its 404.
    response = await platform.api.get(f"{unknown}/runs/run-x")
    assert response.status_code == 404
    assert "Workflow" in response.json()["error"]["message"]
