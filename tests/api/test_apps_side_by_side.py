"""Apps in one process share their route objects (app/routes/served.py), never their state."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from app.settings import Settings
from tests.api.conftest import api_client, connected_store
from tests.api.helpers import API
from tests.builders import echo, workflow


async def test_two_apps_serving_at_once_each_answer_from_their_own_store(
    tmp_path: Path, catalog: Catalog, temporal_env: WorkflowEnvironment
) -> None:
    first, second = (
        Settings(data_dir=tmp_path / "a"),
        Settings(data_dir=tmp_path / "b", auth_mode="jwt", jwt_secret="s" * 32),
    )
    async with (
        connected_store(first) as store_a,
        connected_store(second) as store_b,
        api_client(first, store_a, catalog, temporal_env.client) as a,
        api_client(second, store_b, catalog, temporal_env.client) as b,
    ):
        created = await a.post(f"{API}/workflows", json=workflow("side-a", echo("x")))
        assert created.status_code == 201, created.text
        workflow_id = created.json()["id"]
        # The second app is its own: another store, and its own settings (a token needed).
        assert (await b.get(f"{API}/workflows")).status_code == 401
        assert (await a.get(f"{API}/workflows/{workflow_id}")).status_code == 200
        assert await store_b.get_workflow(workflow_id) is None
        assert [w["id"] for w in (await a.get(f"{API}/workflows")).json()["workflows"]] == [
            workflow_id
        ]
