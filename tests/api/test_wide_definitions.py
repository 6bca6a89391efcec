"""Wide definitions: thousands of nodes save and read back; past the node limit is a 400."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from app.settings import Settings
from temporal_workflows.validation import MAX_NODES
from tests.api.conftest import api_client, connected_store
from tests.api.helpers import assert_error

API = "/api/v1"


@pytest.fixture
def test_heap_frozen() -> Iterator[None]:
    """The test process's heap left out of the collector's passes, as a served API's
    start-up heap is (app/heap.py): late in the suite this process holds millions of
    objects, and a full pass over them (0.2 to 0.4 s, the loop stopped) is the test
    process's, not the API's."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture
async def wide_client(
    tmp_path: Path, catalog: Catalog, temporal_env: WorkflowEnvironment
) -> AsyncIterator[httpx.AsyncClient]:
    # Room for the body of a wide definition (the default limit is 1 MiB).
    settings = Settings(data_dir=tmp_path, max_body_bytes=8 * 1024 * 1024)
    async with connected_store(settings) as store:
        async with api_client(settings, store, catalog, temporal_env.client) as http:
            yield http


def _steps(count: int) -> list[dict[str, Any]]:
    return [
        {"name": f"s{i}", "nodeType": "step", "executorKey": "builtin:echo"} for i in range(count)
    ]


async def test_a_definition_of_two_thousand_nodes_saves_and_reads_back(
    wide_client: httpx.AsyncClient,
) -> None:
    fan = {"name": "fan", "nodeType": "parallel", "children": _steps(1999)}
    created = await wide_client.post(f"{API}/workflows", json={"name": "wide", "nodes": [fan]})
    assert created.status_code == 201, created.text
    workflow = (await wide_client.get(f"{API}/workflows/{created.json()['id']}")).json()
    assert len(workflow["nodes"][0]["children"]) == 1999
    listed = (await wide_client.get(f"{API}/workflows")).json()
    assert listed["workflows"][0]["numNodes"] == 2000


async def test_more_nodes_than_the_limit_are_refused_and_nothing_is_stored(
    wide_client: httpx.AsyncClient,
) -> None:
    body = {"name": "too-wide", "nodes": _steps(MAX_NODES + 1)}
    response = await wide_client.post(f"{API}/workflows", json=body)
    assert_error(
        response,
        400,
        "invalid_request",
        f"{MAX_NODES + 1} nodes exceed the limit of {MAX_NODES}",
    )
    assert (await wide_client.get(f"{API}/workflows")).json()["pagination"]["total"] == 0


async def test_a_save_checking_many_expressions_leaves_other_requests_answered(
    wide_client: httpx.AsyncClient, test_heap_frozen: None
) -> None:
    # A definition's expressions were checked on the event loop: one save of 1,500 nodes
    # of distinct long templates held every request, probes included, for 140 s.
    def terms(i: int, j: int) -> str:
        return " + ".join(f"input.a{i}x{j}x{t}" for t in range(50))

    nodes = [
        {
            "name": f"s{i}",
            "nodeType": "step",
            "executorKey": "builtin:echo",
            "config": {f"k{j}": "{{ " + terms(i, j) + " }}" for j in range(8)},
        }
        for i in range(15)
    ]
    loop = asyncio.get_running_loop()
    began = loop.time()
    save = asyncio.create_task(
        # About a second on an idle machine; several under a full suite.
        wide_client.post(f"{API}/workflows", json={"name": "slow", "nodes": nodes}, timeout=120)
    )
    waits: list[float] = []
    while not save.done():
        asked = loop.time()
        assert (await wide_client.get("/healthz")).status_code == 200
        waits.append(loop.time() - asked)
        await asyncio.sleep(0.05)
    took = loop.time() - began
    assert (await save).status_code == 201
    assert took > 0.5, took  # slow enough to tell
    assert len(waits) > 3 and max(waits) < took / 3, (took, waits)
