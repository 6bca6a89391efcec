"""A run with thousands of node runs: the contract's shapes by default, and opt-in views
that stay small — the run detail with `nodeRuns=summary`, node runs a page at a time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from activities.run_start import new_run_record
from activities.store.records import NodeRunRecord
from tests.store.builders import at
from tests.support.platform import Platform

NODE_RUNS = 1_200


@pytest.fixture
async def large_run(platform: Platform) -> tuple[str, str]:
    """A completed run of an echo workflow with NODE_RUNS node runs (a long loop's worth)."""
    wf = await platform.create(
        {"nodes": [{"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo"}]}
    )
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    record = new_run_record(workflow, "manual", {})
    record.status = "completed"
    await platform.store.insert_run(record)
    # Side by side: the store commits concurrent writes together.
    await asyncio.gather(
        *(
            platform.store.upsert_node_run(
                NodeRunRecord(
                    id=f"{record.id}.echo.{i + 1}",
                    workflow_run_id=record.id,
                    node_id="echo",
                    node_name="Echo",
                    status="failed" if i % 100 == 0 else "completed",
                    attempt=1,
                    started_at=at(i),
                    finished_at=at(i + 0.5),
                    output_snapshot={"i": i},
                )
            )
            for i in range(NODE_RUNS)
        )
    )
    return wf, record.id


def url(wf: str, run_id: str, tail: str = "") -> str:
    return f"/api/v1/workflows/{wf}/runs/{run_id}{tail}"


async def test_the_detail_lists_every_node_run_by_default(
    platform: Platform, large_run: tuple[str, str]
) -> None:
    run: dict[str, Any] = (await platform.api.get(url(*large_run))).json()
    assert len(run["nodeRuns"]) == NODE_RUNS
    assert "nodeRunSummary" not in run


async def test_the_summary_counts_node_runs_instead_of_listing_them(
    platform: Platform, large_run: tuple[str, str]
) -> None:
    answer = await platform.api.get(url(*large_run), params={"nodeRuns": "summary"})
    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert run["nodeRuns"] == []
    assert run["nodeRunSummary"] == {
        "total": NODE_RUNS,
        "byStatus": {"completed": NODE_RUNS - 12, "failed": 12},
    }
    assert run["status"] == "completed" and run["definitionSnapshot"]["nodes"]


async def test_lists_of_runs_count_node_runs_instead_of_listing_them(
    platform: Platform, large_run: tuple[str, str]
) -> None:
    # A page of runs of thousands of node runs each was tens of megabytes.
    wf, run_id = large_run
    listed = (await platform.api.get(f"/api/v1/workflows/{wf}/runs")).json()
    assert len(listed["runs"][0]["nodeRuns"]) == NODE_RUNS  # the contract's shape, as is
    answer = await platform.api.get(f"/api/v1/workflows/{wf}/runs", params={"nodeRuns": "summary"})
    assert answer.status_code == 200, answer.text
    [run] = answer.json()["runs"]
    assert run["id"] == run_id and run["nodeRuns"] == []
    assert run["nodeRunSummary"] == {
        "total": NODE_RUNS,
        "byStatus": {"completed": NODE_RUNS - 12, "failed": 12},
    }
    assert len(answer.content) < 2_000
    # A run's children alike: a retry of the large run, before any node run of its own.
    workflow = await platform.store.get_workflow(wf)
    assert workflow is not None
    child = new_run_record(workflow, "retry", {})
    child.parent_run_id = run_id
    await platform.store.insert_run(child)
    children = await platform.api.get(url(wf, run_id, "/children"), params={"nodeRuns": "summary"})
    assert children.status_code == 200, children.text
    [counted] = children.json()["runs"]
    assert counted["id"] == child.id
    assert counted["nodeRunSummary"] == {"total": 0, "byStatus": {}}


async def test_node_runs_page_through_in_the_full_order(
    platform: Platform, large_run: tuple[str, str]
) -> None:
    everything = (await platform.api.get(url(*large_run, "/nodes"))).json()
    assert "pagination" not in everything
    page = await platform.api.get(url(*large_run, "/nodes"), params={"page": 2, "perPage": 500})
    assert page.status_code == 200, page.text
    body = page.json()
    assert [n["id"] for n in body["nodeRuns"]] == [
        n["id"] for n in everything["nodeRuns"][500:1000]
    ]
    assert body["pagination"] == {"total": NODE_RUNS, "page": 2, "perPage": 500, "totalPages": 3}


@pytest.mark.parametrize(
    ("tail", "params"),
    [
        ("", {"nodeRuns": "some"}),
        ("/children", {"nodeRuns": "none"}),
        ("/nodes", {"perPage": 0}),
        ("/nodes", {"perPage": 1001}),
        ("/nodes", {"page": 0}),
    ],
)
async def test_bad_views_are_400(
    platform: Platform, large_run: tuple[str, str], tail: str, params: dict[str, Any]
) -> None:
    answer = await platform.api.get(url(*large_run, tail), params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_request"
