"""POST /api/v1/workflows: the contract's examples, ids, defaults, duplicates."""

from __future__ import annotations

import copy
from typing import Any

import httpx

from tests.api.examples import (
    CREATE_EXAMPLE,
    GET_EXAMPLE,
    TREE_CONDITION_EXAMPLE,
    TREE_ROUTER_EXAMPLE,
    UPDATE_EXAMPLE,
)
from tests.api.helpers import (
    API,
    all_nodes,
    assert_error,
    assert_every_node_complete,
    assert_sent_fields_kept,
)
from tests.builders import step, workflow


class TestCreateWorkflow:
    async def _round_trip(self, client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
        created = await client.post(f"{API}/workflows", json=body)
        assert created.status_code == 201, created.text
        got = created.json()
        # `id` and `enabled` are the server's to set; everything else comes back as sent.
        assert_sent_fields_kept({k: v for k, v in body.items() if k not in ("id", "enabled")}, got)
        assert_every_node_complete(got["nodes"])
        fetched = await client.get(f"{API}/workflows/{got['id']}")
        assert fetched.status_code == 200
        assert fetched.json() == got
        return got  # type: ignore[no-any-return]

    async def test_contract_create_example_round_trips_field_for_field(
        self, client: httpx.AsyncClient
    ) -> None:
        got = await self._round_trip(client, CREATE_EXAMPLE)
        assert got["enabled"] is False
        assert got["version"] == 1
        assert got["maxConcurrency"] == 8

    async def test_contract_update_example_is_a_valid_definition(
        self, client: httpx.AsyncClient
    ) -> None:
        await self._round_trip(client, UPDATE_EXAMPLE)

    async def test_tree_shaped_condition_example_round_trips(
        self, client: httpx.AsyncClient
    ) -> None:
        got = await self._round_trip(client, TREE_CONDITION_EXAMPLE)
        branch = got["nodes"][1]
        assert [n["name"] for n in branch["trueSteps"]] == ["C", "E", "G"]
        assert [n["name"] for n in branch["falseSteps"]] == ["D", "F", "H"]

    async def test_tree_shaped_router_example_round_trips(self, client: httpx.AsyncClient) -> None:
        got = await self._round_trip(client, TREE_ROUTER_EXAMPLE)
        choices = got["nodes"][0]["choices"]
        assert [c["name"] for c in choices] == ["tech", "general"]
        assert [s["name"] for s in choices[0]["steps"]] == ["hn-research", "deep-dive"]

    async def test_get_example_keeps_the_node_ids_it_sends(self, client: httpx.AsyncClient) -> None:
        got = await self._round_trip(
            client, {k: GET_EXAMPLE[k] for k in ("name", "description", "canvas", "nodes")}
        )
        ids = [n["id"] for n in all_nodes(got["nodes"])]
        assert ids == [
            "node-1",
            "node-2",
            "node-2-1",
            "node-2-2",
            "node-3",
            "node-3-t1",
            "node-3-f1",
        ]

    async def test_node_ids_are_generated_unique_across_the_tree(
        self, client: httpx.AsyncClient
    ) -> None:
        got = await self._round_trip(client, CREATE_EXAMPLE)
        ids = [n["id"] for n in all_nodes(got["nodes"])]
        assert len(ids) == 8 and len(set(ids)) == 8

    async def test_workflow_id_is_generated_and_a_client_id_ignored(
        self, client: httpx.AsyncClient
    ) -> None:
        got = await self._round_trip(client, workflow("mine") | {"id": "chosen-by-client"})
        assert got["id"] != "chosen-by-client"

    async def test_enabled_in_the_body_is_ignored(self, client: httpx.AsyncClient) -> None:
        got = await self._round_trip(client, workflow("eager") | {"enabled": True})
        assert got["enabled"] is False

    async def test_omitted_optional_fields_get_their_documented_defaults(
        self, client: httpx.AsyncClient
    ) -> None:
        node = step("s", stepConfig={"maxRetries": 2, "onError": "skip"})
        got = await self._round_trip(client, workflow("defaults", node))
        assert got["canvas"] == {"viewport": {"x": 0, "y": 0, "zoom": 1}}
        assert got["description"] is None
        saved = got["nodes"][0]
        assert saved["position"] == {"x": 0, "y": 0}
        assert saved["config"] == {}
        assert saved["a2aPool"] == []
        assert saved["stepConfig"]["backoffBaseSeconds"] == 1.0
        assert saved["stepConfig"]["backoffMaxSeconds"] == 60.0
        for unused in ("conditionCel", "loopConfig", "humanReview"):
            assert saved[unused] is None

    async def test_timestamps_are_iso8601_utc(self, client: httpx.AsyncClient) -> None:
        got = await self._round_trip(client, workflow("times"))
        assert got["createdAt"].endswith("Z") and got["createdAt"] == got["updatedAt"]

    async def test_duplicate_name_is_409_duplicate_entry(self, client: httpx.AsyncClient) -> None:
        await self._round_trip(client, workflow("taken"))
        again = await client.post(f"{API}/workflows", json=workflow("taken"))
        assert_error(again, 409, "duplicate_entry", "taken")
        listed = (await client.get(f"{API}/workflows")).json()
        assert listed["pagination"]["total"] == 1

    async def test_unknown_fields_are_ignored(self, client: httpx.AsyncClient) -> None:
        body = workflow("legacy")
        sent = copy.deepcopy(body)
        body["nodes"][0]["requireApproval"] = True
        created = await client.post(f"{API}/workflows", json=body)
        assert created.status_code == 201
        assert_sent_fields_kept(sent, created.json())
        assert "requireApproval" not in created.json()["nodes"][0]
