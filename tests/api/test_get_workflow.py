"""GET /api/v1/workflows/{id}: the whole tree, malformed ids, unknown ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.examples import UPDATE_EXAMPLE
from tests.api.helpers import API, assert_error, assert_every_node_complete

# A trailing line end (%0A) passed a `$` (Python's matches before one): 404, not 400.
MALFORMED_IDS = ["-starts-with-dash", "has space", "x" * 129, "semi;colon", "line-end%0A"]


class TestGetWorkflow:
    async def test_every_node_carries_every_field_recursively(
        self, client: httpx.AsyncClient, create: Callable[..., Any]
    ) -> None:
        created = await create(UPDATE_EXAMPLE)
        got = (await client.get(f"{API}/workflows/{created['id']}")).json()
        assert_every_node_complete(got["nodes"])
        assert set(got) == {
            "id", "name", "description", "canvas", "nodes", "maxConcurrency", "enabled",
            "version", "createdAt", "updatedAt",
        }  # fmt: skip

    async def test_unknown_id_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.get(f"{API}/workflows/does-not-exist")
        assert_error(response, 404, "resource_not_found", "does-not-exist")

    @pytest.mark.parametrize("bad_id", MALFORMED_IDS)
    async def test_malformed_id_is_400(self, client: httpx.AsyncClient, bad_id: str) -> None:
        response = await client.get(f"{API}/workflows/{bad_id}")
        assert_error(response, 400, "invalid_request", "Invalid workflow id")
