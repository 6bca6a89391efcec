"""POST /api/v1/workflows/{id}/toggle: enable and disable, never a new version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.helpers import API, assert_error
from tests.builders import workflow


class TestToggleWorkflow:
    async def test_enable_then_disable(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(workflow("gate"))
        url = f"{API}/workflows/{created['id']}/toggle"
        enabled = await client.post(url, json={"enabled": True})
        assert enabled.status_code == 200
        assert enabled.json()["enabled"] is True
        assert enabled.json()["updatedAt"] > created["updatedAt"]
        disabled = (await client.post(url, json={"enabled": False})).json()
        assert disabled["enabled"] is False
        assert (await client.get(f"{API}/workflows/{created['id']}")).json() == disabled

    async def test_toggle_keeps_the_version(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(workflow("versioned"))
        toggled = (
            await client.post(f"{API}/workflows/{created['id']}/toggle", json={"enabled": True})
        ).json()
        assert toggled["version"] == 1
        versions = (await client.get(f"{API}/workflows/{created['id']}/versions")).json()
        assert [v["version"] for v in versions["versions"]] == [1]

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            ({}, "enabled: Field required"),
            ({"enabled": "true"}, "enabled: Input should be a valid boolean"),
            ({"enabled": 1}, "enabled: Input should be a valid boolean"),
            ({"enabled": None}, "enabled: Input should be a valid boolean"),
        ],
        ids=["missing", "string", "number", "null"],
    )
    async def test_enabled_must_be_a_boolean(
        self,
        client: httpx.AsyncClient,
        create: Callable[..., Any],
        body: dict[str, Any],
        fragment: str,
    ) -> None:
        created = await create(workflow("strict"))
        response = await client.post(f"{API}/workflows/{created['id']}/toggle", json=body)
        assert_error(response, 400, "invalid_request", fragment)
        assert (await client.get(f"{API}/workflows/{created['id']}")).json() == created

    async def test_unknown_id_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.post(f"{API}/workflows/missing/toggle", json={"enabled": True})
        assert_error(response, 404, "resource_not_found")

    async def test_malformed_id_is_400(self, client: httpx.AsyncClient) -> None:
        response = await client.post(f"{API}/workflows/a%20b/toggle", json={"enabled": True})
        assert_error(response, 400, "invalid_request", "Invalid workflow id")
