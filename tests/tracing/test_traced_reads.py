"""A read the read cache could answer before routing (app/read_lane.py) is, when traced,
answered through routing, so its span is named after its route like every request's."""

from __future__ import annotations

from tests.builders import echo
from tests.tracing.conftest import Traced

DETAIL = "/api/v1/workflows/{workflow_id}/runs/{run_id}"


async def test_a_read_asked_again_is_traced_under_its_route(traced: Traced) -> None:
    p = traced.platform
    run = await p.run({"nodes": [echo("a")]})
    url = f"/api/v1/workflows/{run['workflowDefinitionId']}/runs/{run['id']}"
    before = len(traced.spans())
    first, again = await p.api.get(url), await p.api.get(url)
    assert again.status_code == 200 and again.content == first.content
    reads = [s for s in traced.spans()[before:] if s.attributes.get("http.route") == DETAIL]
    assert [s.name for s in reads] == [f"GET {DETAIL}"] * 2
