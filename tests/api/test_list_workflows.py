"""GET /api/v1/workflows: summaries, paging, search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.examples import CREATE_EXAMPLE
from tests.api.helpers import API, assert_error
from tests.builders import workflow


class TestListWorkflows:
    async def test_empty_store_lists_nothing(self, client: httpx.AsyncClient) -> None:
        response = await client.get(f"{API}/workflows")
        assert response.status_code == 200
        assert response.json() == {
            "workflows": [],
            "pagination": {"total": 0, "page": 1, "perPage": 20, "totalPages": 0},
        }

    async def test_summary_counts_every_node_in_the_tree(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(CREATE_EXAMPLE)
        [summary] = (await client.get(f"{API}/workflows")).json()["workflows"]
        assert summary == {
            "id": created["id"],
            "name": "Customer Onboarding Workflow",
            "description": CREATE_EXAMPLE["description"],
            "numNodes": 8,
            "enabled": False,
            "version": 1,
            "createdAt": created["createdAt"],
            "updatedAt": created["updatedAt"],
        }

    async def test_pages_split_the_list_newest_updated_first(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        for i in range(5):
            await create(workflow(f"wf-{i}"))
        first = (await client.get(f"{API}/workflows", params={"perPage": 2})).json()
        third = (await client.get(f"{API}/workflows", params={"perPage": 2, "page": 3})).json()
        assert [w["name"] for w in first["workflows"]] == ["wf-4", "wf-3"]
        assert [w["name"] for w in third["workflows"]] == ["wf-0"]
        assert third["pagination"] == {"total": 5, "page": 3, "perPage": 2, "totalPages": 3}

    async def test_a_page_past_the_end_is_empty(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        await create(workflow("only"))
        page = (await client.get(f"{API}/workflows", params={"page": 9})).json()
        assert page["workflows"] == [] and page["pagination"]["total"] == 1

    async def test_query_matches_name_or_description_case_insensitively(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        await create(workflow("Invoice approval"))
        await create(workflow("Onboarding", description="Sends the INVOICE too"))
        await create(workflow("Unrelated"))
        found = (await client.get(f"{API}/workflows", params={"query": "invoice"})).json()
        assert sorted(w["name"] for w in found["workflows"]) == ["Invoice approval", "Onboarding"]
        assert found["pagination"]["total"] == 2

    @pytest.mark.parametrize("query", ["istanbul", "İST", "ISTANBUL"])
    async def test_query_finds_a_dotted_capital_i_by_plain_i_and_by_itself(
        self, client: httpx.AsyncClient, create: Callable[..., Any], query: str
    ) -> None:
        await create(workflow("İstanbul"))
        await create(workflow("Ankara"))
        found = (await client.get(f"{API}/workflows", params={"query": query})).json()
        assert [w["name"] for w in found["workflows"]] == ["İstanbul"]

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"page": 0}, "page"),
            ({"page": "first"}, "page"),
            ({"perPage": 0}, "perPage"),
            ({"perPage": 101}, "perPage"),
        ],
    )
    async def test_out_of_range_paging_is_400(
        self, client: httpx.AsyncClient, params: dict[str, Any], field: str
    ) -> None:
        response = await client.get(f"{API}/workflows", params=params)
        assert_error(response, 400, "invalid_request", f"{field}:")
        assert response.json()["error"]["details"][0]["path"] == field
