"""DELETE /api/v1/workflows/{id}: 204, gone with its versions and runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from activities.store.base import Store
from activities.store.records import RunRecord
from temporal_workflows.definition import WorkflowSpec
from tests.api.helpers import API, assert_error
from tests.builders import workflow


class TestDeleteWorkflow:
    async def test_delete_is_204_and_the_workflow_is_gone(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(workflow("doomed"))
        response = await client.delete(f"{API}/workflows/{created['id']}")
        assert response.status_code == 204 and response.content == b""
        assert_error(
            await client.get(f"{API}/workflows/{created['id']}"), 404, "resource_not_found"
        )
        listed = (await client.get(f"{API}/workflows")).json()
        assert listed["pagination"]["total"] == 0

    async def test_delete_removes_versions_and_runs(
        self, client: httpx.AsyncClient, create: Callable[..., Any], store: Store
    ) -> None:
        created = await create(workflow("with-runs"))
        snapshot = WorkflowSpec.model_validate(created)
        await store.insert_run(
            RunRecord(
                id="run-1",
                workflow_definition_id=created["id"],
                workflow_version=1,
                definition_snapshot=snapshot,
            )
        )
        await client.delete(f"{API}/workflows/{created['id']}")
        assert await store.get_run("run-1") is None
        assert await store.list_workflow_versions(created["id"]) == []

    async def test_the_name_is_free_again_after_delete(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(workflow("reused"))
        await client.delete(f"{API}/workflows/{created['id']}")
        await create(workflow("reused"))

    async def test_deleting_twice_is_404(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(workflow("once"))
        await client.delete(f"{API}/workflows/{created['id']}")
        response = await client.delete(f"{API}/workflows/{created['id']}")
        assert_error(response, 404, "resource_not_found")

    async def test_malformed_id_is_400(self, client: httpx.AsyncClient) -> None:
        response = await client.delete(f"{API}/workflows/-bad")
        assert_error(response, 400, "invalid_request", "Invalid workflow id")
