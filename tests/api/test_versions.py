"""GET /api/v1/workflows/{id}/versions[/{n}]: every definition change is kept and readable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.examples import CREATE_EXAMPLE, UPDATE_EXAMPLE
from tests.api.helpers import API, assert_error, assert_every_node_complete
from tests.builders import workflow

Create = Callable[..., Any]
DEFINITION_FIELDS = ("name", "description", "canvas", "nodes", "maxConcurrency")


class TestListVersions:
    async def test_a_new_workflow_has_version_one(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(CREATE_EXAMPLE)
        listed = (await client.get(f"{API}/workflows/{created['id']}/versions")).json()
        assert listed == {
            "versions": [
                {
                    "version": 1,
                    "createdAt": created["createdAt"],
                    "name": created["name"],
                    "description": created["description"],
                    "numNodes": 8,
                    "createdBy": "dev",
                }
            ]
        }

    async def test_each_definition_change_adds_a_version_oldest_first(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("v1"))
        url = f"{API}/workflows/{created['id']}"
        await client.put(url, json={"name": "v2"})
        await client.put(url, json={"enabled": True})
        await client.put(url, json={"name": "v3"})
        listed = (await client.get(f"{url}/versions")).json()["versions"]
        assert [(v["version"], v["name"]) for v in listed] == [(1, "v1"), (2, "v2"), (3, "v3")]

    async def test_unknown_workflow_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.get(f"{API}/workflows/missing/versions")
        assert_error(response, 404, "resource_not_found")

    async def test_malformed_workflow_id_is_400(self, client: httpx.AsyncClient) -> None:
        response = await client.get(f"{API}/workflows/-x/versions")
        assert_error(response, 400, "invalid_request", "Invalid workflow id")


class TestGetVersion:
    async def test_old_versions_keep_their_definition(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(CREATE_EXAMPLE)
        url = f"{API}/workflows/{created['id']}"
        updated = (await client.put(url, json=UPDATE_EXAMPLE)).json()
        first = (await client.get(f"{url}/versions/1")).json()
        second = (await client.get(f"{url}/versions/2")).json()
        assert {k: first[k] for k in DEFINITION_FIELDS} == {
            k: created[k] for k in DEFINITION_FIELDS
        }
        assert {k: second[k] for k in DEFINITION_FIELDS} == {
            k: updated[k] for k in DEFINITION_FIELDS
        }
        assert first["workflowId"] == created["id"] and first["version"] == 1
        assert_every_node_complete(first["nodes"])

    async def test_unknown_version_is_404(self, client: httpx.AsyncClient, create: Create) -> None:
        created = await create(workflow("single"))
        response = await client.get(f"{API}/workflows/{created['id']}/versions/2")
        assert_error(response, 404, "resource_not_found", "no version 2")

    @pytest.mark.parametrize("bad", ["0", "-1", "one", "1.5", "1.0", "1e0", "%201"])
    async def test_version_must_be_a_positive_integer(
        self, client: httpx.AsyncClient, create: Create, bad: str
    ) -> None:
        created = await create(workflow("numbered"))
        response = await client.get(f"{API}/workflows/{created['id']}/versions/{bad}")
        assert_error(response, 400, "invalid_request", "version")
