"""PUT /api/v1/workflows/{id}: partial updates, versions only on definition changes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from activities.executors.catalog import Catalog
from activities.store.base import Store
from app.errors import NotFound
from app.schemas.workflow import WorkflowCreate, WorkflowUpdate
from app.services.definitions import DefinitionService
from tests.api.examples import CREATE_EXAMPLE, UPDATE_EXAMPLE
from tests.api.helpers import API, assert_error, assert_every_node_complete, assert_sent_fields_kept
from tests.builders import step, workflow

Create = Callable[..., Any]


async def _put(client: httpx.AsyncClient, wf: dict[str, Any], body: Any) -> httpx.Response:
    return await client.put(f"{API}/workflows/{wf['id']}", json=body)


async def _versions(client: httpx.AsyncClient, wf: dict[str, Any]) -> list[int]:
    listed = (await client.get(f"{API}/workflows/{wf['id']}/versions")).json()
    return [v["version"] for v in listed["versions"]]


class TestUpdateWorkflow:
    async def test_contract_update_example_applies_field_for_field(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(CREATE_EXAMPLE)
        response = await _put(client, created, UPDATE_EXAMPLE)
        assert response.status_code == 200, response.text
        got = response.json()
        assert_sent_fields_kept(UPDATE_EXAMPLE, got)
        assert_every_node_complete(got["nodes"])
        assert got["version"] == 2
        assert got["createdAt"] == created["createdAt"]
        assert got["updatedAt"] > created["updatedAt"]
        assert (await client.get(f"{API}/workflows/{created['id']}")).json() == got

    async def test_omitted_fields_keep_their_values(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("keep", description="stays"))
        got = (await _put(client, created, {"name": "renamed"})).json()
        assert got["description"] == "stays"
        assert got["nodes"] == created["nodes"]

    async def test_renaming_is_a_new_version(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("before"))
        got = (await _put(client, created, {"name": "after"})).json()
        assert got["version"] == 2
        assert await _versions(client, created) == [1, 2]

    async def test_enabling_is_not_a_new_version(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("switch"))
        got = (await _put(client, created, {"enabled": True})).json()
        assert got["enabled"] is True and got["version"] == 1
        assert await _versions(client, created) == [1]

    async def test_resending_the_same_definition_is_not_a_new_version(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(CREATE_EXAMPLE)
        same = {k: created[k] for k in ("name", "description", "canvas", "nodes")}
        got = (await _put(client, created, same)).json()
        assert got == created

    async def test_changing_max_concurrency_is_a_new_version(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("bounded"))
        got = (await _put(client, created, {"maxConcurrency": 2})).json()
        assert got["maxConcurrency"] == 2 and got["version"] == 2

    async def test_null_description_clears_it(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("described", description="text"))
        got = (await _put(client, created, {"description": None})).json()
        assert got["description"] is None

    async def test_new_nodes_without_ids_get_generated_ids(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("grow"))
        got = (await _put(client, created, {"nodes": [step("one"), step("two")]})).json()
        ids = [n["id"] for n in got["nodes"]]
        assert all(ids) and len(set(ids)) == 2

    @pytest.mark.parametrize(
        ("body", "fragments"),
        [
            ({"nodes": [{"name": "A", "nodeType": "step"}]}, ["nodes[0] ('A')", "exactly one of"]),
            ({"nodes": [step("A", key="ghost")]}, ["('A')", "unknown executorKey"]),
            ({"nodes": []}, ["at least one root node"]),
            ({"name": None}, ["name: must not be null"]),
            ({"name": ""}, ["name"]),
            ({"nodes": None}, ["nodes: must not be null"]),
            ({"enabled": "yes"}, ["enabled: Input should be a valid boolean"]),
            ({"canvas": {"viewport": {"zoom": 0}}}, ["canvas.viewport.zoom"]),
            ({"maxConcurrency": 0}, ["maxConcurrency"]),
        ],
        ids=[
            "invalid_node", "unknown_executor", "no_nodes", "null_name", "empty_name",
            "null_nodes", "enabled_not_boolean", "zoom_not_positive", "max_concurrency_zero",
        ],
    )  # fmt: skip
    async def test_invalid_update_is_400_and_changes_nothing(
        self,
        client: httpx.AsyncClient,
        create: Create,
        body: dict[str, Any],
        fragments: list[str],
    ) -> None:
        created = await create(workflow("stable"))
        assert_error(await _put(client, created, body), 400, "invalid_request", *fragments)
        assert (await client.get(f"{API}/workflows/{created['id']}")).json() == created
        assert await _versions(client, created) == [1]

    async def test_taken_name_is_409_and_changes_nothing(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        await create(workflow("first"))
        second = await create(workflow("second"))
        assert_error(await _put(client, second, {"name": "first"}), 409, "duplicate_entry", "first")
        assert (await client.get(f"{API}/workflows/{second['id']}")).json() == second

    async def test_unknown_id_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.put(f"{API}/workflows/missing", json={"name": "x"})
        assert_error(response, 404, "resource_not_found")

    async def test_malformed_id_is_400(self, client: httpx.AsyncClient) -> None:
        response = await client.put(f"{API}/workflows/bad%20id", json={"name": "x"})
        assert_error(response, 400, "invalid_request", "Invalid workflow id")


class TestSavesAtOnce:
    async def test_saves_sent_at_once_each_get_a_version_of_their_own(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        # Before saves were written over the record as read, two of eight often answered
        # the same version and some descriptions were kept in no version at all.
        created = await create(workflow("at-once"))
        answers = await asyncio.gather(
            *(_put(client, created, {"description": f"d{i}"}) for i in range(8))
        )
        assert [a.status_code for a in answers] == [200] * 8
        answered = {a.json()["version"]: a.json()["description"] for a in answers}
        assert sorted(answered) == list(range(2, 10))
        assert await _versions(client, created) == list(range(1, 10))
        for version, description in answered.items():
            kept = await client.get(f"{API}/workflows/{created['id']}/versions/{version}")
            assert kept.json()["description"] == description
        latest = (await client.get(f"{API}/workflows/{created['id']}")).json()
        assert (latest["version"], latest["description"]) == (9, answered[9])

    async def test_forty_saves_and_toggles_at_once_all_land(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        # Each lost its write to another and read again at once, 20 times at most: under
        # 40 at once some lost all 20 and were answered 409 "being changed by others".
        created = await create(workflow("forty-at-once"))
        base = f"{API}/workflows/{created['id']}"
        answers = await asyncio.gather(
            *(
                _put(client, created, {"description": f"d{i}"})
                if i % 4
                else client.post(f"{base}/toggle", json={"enabled": i % 8 == 0})
                for i in range(40)
            )
        )
        assert [a.status_code for a in answers] == [200] * 40, [a.text for a in answers]
        assert await _versions(client, created) == list(range(1, 32))

    async def test_a_toggle_sent_with_a_save_is_never_undone(
        self, client: httpx.AsyncClient, create: Create
    ) -> None:
        created = await create(workflow("toggled-at-once"))
        base = f"{API}/workflows/{created['id']}"
        for i in range(10):
            enabled = i % 2 == 0
            toggle, save = await asyncio.gather(
                client.post(f"{base}/toggle", json={"enabled": enabled}),
                _put(client, created, {"description": f"d{i}"}),
            )
            assert (toggle.status_code, save.status_code) == (200, 200)
            assert toggle.json()["enabled"] is enabled
            assert (await client.get(base)).json()["enabled"] is enabled

    async def test_a_save_over_a_stale_read_applies_its_fields_to_the_latest_record(
        self, store: Store, catalog: Catalog
    ) -> None:
        # The route read the record, then a toggle landed before the save's write.
        definitions = DefinitionService(store, catalog)
        read = await definitions.create(WorkflowCreate.model_validate(workflow("stale")))
        await definitions.toggle(read, True)
        saved = await definitions.update(read, WorkflowUpdate(description="new"))
        assert (saved.enabled, saved.version, saved.description) == (True, 2, "new")
        assert await store.get_workflow(read.id) == saved
        assert [v.version for v in await store.list_workflow_versions(read.id)] == [1, 2]

    async def test_a_toggle_over_a_stale_read_keeps_the_save_that_landed_first(
        self, store: Store, catalog: Catalog
    ) -> None:
        definitions = DefinitionService(store, catalog)
        read = await definitions.create(WorkflowCreate.model_validate(workflow("stale-toggle")))
        await definitions.update(read, WorkflowUpdate(description="new"))
        enabled = await definitions.toggle(read, True)
        assert (enabled.enabled, enabled.version, enabled.description) == (True, 2, "new")
        assert await store.get_workflow(read.id) == enabled

    async def test_a_save_over_a_workflow_deleted_meanwhile_is_404(
        self, store: Store, catalog: Catalog
    ) -> None:
        definitions = DefinitionService(store, catalog)
        read = await definitions.create(WorkflowCreate.model_validate(workflow("gone")))
        await store.delete_workflow(read.id)
        with pytest.raises(NotFound):
            await definitions.update(read, WorkflowUpdate(description="new"))
        assert await store.get_workflow(read.id) is None
