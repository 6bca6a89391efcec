"""Run details and pages of runs answered from the read cache never lag a write.

The writes come through a second store connection, as the worker's do from its process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from activities.store.base import Store
from app.settings import Settings
from tests.api.conftest import connected_store
from tests.builders import workflow
from tests.store.builders import node_run, run

Create = Callable[..., Any]


@pytest.fixture
async def worker_store(settings: Settings) -> AsyncIterator[Store]:
    async with connected_store(settings) as opened:
        yield opened


async def _run_of(create: Create, worker_store: Store, name: str) -> tuple[str, str]:
    created = await create(workflow(name))
    stored = await worker_store.insert_run(run(created["id"]))
    return created["id"], stored.id


async def _get(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    response = await client.get(url)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def _read_twice(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    """The answer, read twice: the second (from the cache) is the first."""
    first = await _get(client, url)
    assert first == await _get(client, url)
    return first


async def test_a_run_detail_shows_every_write_made_since_it_was_read(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "cached-detail")
    url = f"/api/v1/workflows/{workflow_id}/runs/{run_id}"
    first = await _read_twice(client, url)
    assert first["status"] == "pending" and first["nodeRuns"] == []

    await worker_store.update_run(run_id, 1, {"status": "running"})
    assert (await _get(client, url))["status"] == "running"

    record = node_run(run_id, rev=1, status="running")
    await worker_store.upsert_node_run(record)
    assert [n["status"] for n in (await _get(client, url))["nodeRuns"]] == ["running"]
    summary = await _get(client, f"{url}?nodeRuns=summary")
    assert summary["nodeRunSummary"]["byStatus"] == {"running": 1}

    await worker_store.merge_node_run({"id": record.id, "rev": 2, "status": "completed"})
    assert [n["status"] for n in (await _get(client, url))["nodeRuns"]] == ["completed"]
    summary = await _get(client, f"{url}?nodeRuns=summary")
    assert summary["nodeRunSummary"]["byStatus"] == {"completed": 1}


async def test_a_read_run_is_still_not_found_under_another_workflow(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "owner-of-run")
    other = await create(workflow("not-the-owner"))
    await _get(client, f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
    response = await client.get(f"/api/v1/workflows/{other['id']}/runs/{run_id}")
    assert response.status_code == 404


async def test_a_read_run_is_gone_with_its_workflow(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "deleted-with-runs")
    await _read_twice(client, f"/api/v1/workflows/{workflow_id}/runs/{run_id}")
    await _read_twice(client, f"/api/v1/runs/{run_id}")
    await _get(client, f"/api/v1/workflows/{workflow_id}/runs")
    assert await worker_store.delete_workflow(workflow_id)
    for url in (f"/api/v1/workflows/{workflow_id}/runs/{run_id}", f"/api/v1/runs/{run_id}"):
        assert (await client.get(url)).status_code == 404


async def test_a_page_of_runs_shows_new_runs_and_their_writes(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "cached-list")
    url = f"/api/v1/workflows/{workflow_id}/runs"
    first = await _read_twice(client, url)
    assert [r["id"] for r in first["runs"]] == [run_id]

    second = await worker_store.insert_run(run(workflow_id, started_at=_after_first(first)))
    listed = await _get(client, url)
    assert {r["id"] for r in listed["runs"]} == {run_id, second.id}
    assert listed["pagination"]["total"] == 2

    await worker_store.upsert_node_run(node_run(second.id, rev=1, status="completed"))
    listed = await _get(client, url)
    by_id = {r["id"]: r for r in listed["runs"]}
    assert [n["status"] for n in by_id[second.id]["nodeRuns"]] == ["completed"]
    running = await _get(client, f"{url}?status=running")
    assert running["runs"] == []
    await worker_store.update_run(run_id, 1, {"status": "running"})
    running = await _get(client, f"{url}?status=running")
    assert [r["id"] for r in running["runs"]] == [run_id]


def _after_first(page: dict[str, Any]) -> datetime:
    """A start time after the page's first run (so a new run lists first)."""
    started = datetime.fromisoformat(page["runs"][0]["startedAt"].replace("Z", "+00:00"))
    return started + timedelta(seconds=1)


async def test_a_detail_answers_304_to_its_own_etag_until_a_write(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "etag-detail")
    url = f"/api/v1/workflows/{workflow_id}/runs/{run_id}"
    first = await client.get(url)
    tag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"  # kept, but always revalidated
    unchanged = await client.get(url, headers={"If-None-Match": tag})
    assert unchanged.status_code == 304 and unchanged.content == b""
    assert unchanged.headers["etag"] == tag
    # Weak comparison, lists and `*` (RFC 9110), and a stale tag gets the body.
    for header in (f"W/{tag}", f'"other", {tag}', "*"):
        assert (await client.get(url, headers={"If-None-Match": header})).status_code == 304
    assert (await client.get(url, headers={"If-None-Match": '"stale"'})).json() == first.json()

    await worker_store.update_run(run_id, 1, {"status": "running"})
    changed = await client.get(url, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.json()["status"] == "running"
    assert changed.headers["etag"] != tag
    summary = await client.get(f"{url}?nodeRuns=summary", headers={"If-None-Match": tag})
    assert summary.status_code == 200  # another view: its own answer, even at one count


async def test_a_run_found_by_its_id_alone_is_kept_and_shows_every_write(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "cached-lookup")
    url = f"/api/v1/runs/{run_id}"
    first = await client.get(url)
    assert first.json()["workflowDefinitionId"] == workflow_id
    assert first.json() == await _get(client, url)
    tag = first.headers["etag"]
    assert (await client.get(url, headers={"If-None-Match": tag})).status_code == 304

    await worker_store.update_run(run_id, 1, {"status": "running"})
    changed = await client.get(url, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.json()["status"] == "running"
    await worker_store.upsert_node_run(node_run(run_id, rev=1, status="completed"))
    assert [n["status"] for n in (await _get(client, url))["nodeRuns"]] == ["completed"]


async def test_a_page_answers_304_to_its_own_etag_until_a_write(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, _ = await _run_of(create, worker_store, "etag-list")
    url = f"/api/v1/workflows/{workflow_id}/runs"
    tag = (await client.get(url)).headers["etag"]
    assert (await client.get(url, headers={"If-None-Match": tag})).status_code == 304
    await worker_store.insert_run(run(workflow_id))
    changed = await client.get(url, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.json()["pagination"]["total"] == 2


async def test_an_etag_never_turns_a_404_into_a_304(
    client: httpx.AsyncClient, create: Create, worker_store: Store
) -> None:
    workflow_id, run_id = await _run_of(create, worker_store, "etag-owner")
    other = await create(workflow("etag-not-owner"))
    tag = (await client.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}")).headers["etag"]
    response = await client.get(
        f"/api/v1/workflows/{other['id']}/runs/{run_id}", headers={"If-None-Match": tag}
    )
    assert response.status_code == 404
