"""Answers that carry node runs stop at TRELLIS_MAX_RESPONSE_BYTES: past it they are 400
`response_too_large`, saying how to ask for less (an outside audit's 2.2 GB run detail
grew the API to 22 GB until the kernel killed it), and the small views still answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from activities.store.base import Store
from tests.api.conftest import api_client, connected_store
from tests.api.helpers import API, assert_error
from tests.builders import workflow
from tests.store.builders import at, node_run, run

LIMIT = 100_000


@pytest.fixture
async def limited(
    tmp_path: Path, catalog: Catalog, temporal_env: WorkflowEnvironment
) -> AsyncIterator[tuple[httpx.AsyncClient, Store]]:
    from app.settings import Settings

    settings = Settings(data_dir=tmp_path, max_response_bytes=LIMIT)
    async with connected_store(settings) as store:
        async with api_client(settings, store, catalog, temporal_env.client) as client:
            yield client, store


async def a_run(client: httpx.AsyncClient, store: Store, outputs: int) -> tuple[str, str]:
    """A run of the workflow with `outputs` node runs of ~20 KB each."""
    created = await client.post(f"{API}/workflows", json=workflow("wide"))
    assert created.status_code == 201, created.text
    workflow_id = created.json()["id"]
    record = run(workflow_id, status="completed")
    await store.insert_run(record)
    for i in range(outputs):
        await store.upsert_node_run(
            node_run(
                record.id, id=f"{record.id}.{i}", started_at=at(i), output_snapshot="x" * 20_000
            )
        )
    return workflow_id, record.id


async def test_answers_past_the_limit_are_400_and_say_how_to_ask_for_less(
    limited: tuple[httpx.AsyncClient, Store],
) -> None:
    client, store = limited
    workflow_id, run_id = await a_run(client, store, outputs=10)  # ~200 KB of node runs
    runs = f"{API}/workflows/{workflow_id}/runs"
    for path in (
        f"{runs}/{run_id}",
        f"{API}/runs/{run_id}",
        runs,
        f"{runs}/{run_id}/nodes",
        f"{runs}/{run_id}/nodes?page=1&perPage=10",
    ):
        refused = await client.get(path)
        assert_error(refused, 400, "response_too_large", "TRELLIS_MAX_RESPONSE_BYTES", "summary")
    for path in (
        f"{runs}/{run_id}?nodeRuns=summary",
        f"{API}/runs/{run_id}?nodeRuns=summary",
        f"{runs}?nodeRuns=summary",
        f"{runs}/{run_id}/nodes?page=2&perPage=3",
        f"{runs}/{run_id}/nodes/{run_id}.7",
        # Only the node runs' states: the console's run page asks for it with the summary.
        f"{runs}/{run_id}/graph",
    ):
        answer = await client.get(path)
        assert answer.status_code == 200, (path, answer.text)
    summary = (await client.get(f"{runs}/{run_id}?nodeRuns=summary")).json()
    assert summary["nodeRunSummary"] == {"total": 10, "byStatus": {"pending": 10}}
    page = (await client.get(f"{runs}/{run_id}/nodes?page=2&perPage=3")).json()
    assert [n["id"] for n in page["nodeRuns"]] == [f"{run_id}.{i}" for i in (3, 4, 5)]


async def test_answers_within_the_limit_carry_every_node_run_as_before(
    limited: tuple[httpx.AsyncClient, Store],
) -> None:
    client, store = limited
    workflow_id, run_id = await a_run(client, store, outputs=3)
    detail = await client.get(f"{API}/workflows/{workflow_id}/runs/{run_id}")
    assert detail.status_code == 200, detail.text
    assert len(detail.json()["nodeRuns"]) == 3
    listed = await client.get(f"{API}/workflows/{workflow_id}/runs")
    assert [len(r["nodeRuns"]) for r in listed.json()["runs"]] == [3]
