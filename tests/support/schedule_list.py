"""Temporal's schedule list shows a new schedule a moment late (its visibility store):
a test that reads the list, or draws a page from it, after a create waits for it first."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.polling import eventually


async def until_listed(api: httpx.AsyncClient, workflow_id: str, *ids: str) -> list[dict[str, Any]]:
    """The workflow's schedules (`GET …/schedules`) once the list holds every one of `ids`."""

    async def holding_all() -> list[dict[str, Any]] | None:
        answer = await api.get(f"/api/v1/workflows/{workflow_id}/schedules")
        assert answer.status_code == 200, answer.text
        schedules: list[dict[str, Any]] = answer.json()["schedules"]
        return schedules if set(ids) <= {s["id"] for s in schedules} else None

    found: list[dict[str, Any]] = await eventually(holding_all)
    return found
