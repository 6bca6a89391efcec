"""/healthz and /readyz: liveness always; readiness names the store and Temporal when down,
and says whether a worker polls the task queue."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from activities.store.base import Store
from activities.store.sqlite import SqliteStore
from app.main import create_app
from app.settings import Settings
from app.setup import register_search_attributes
from tests.api.conftest import api_client
from tests.api.helpers import API, assert_error
from tests.builders import workflow
from tests.support.bare_namespace import bare_namespace
from tests.support.cutting_proxy import CuttingProxy
from tests.support.frozen import frozen
from tests.support.own_temporal import own_temporal
from tests.support.platform import executor_registry, running_platform
from tests.support.processes import Processes
from tests.support.server import free_port, serving


async def _dead_temporal() -> Client:
    # Lazy: the client is built without dialling; every call fails to connect.
    return await Client.connect(f"127.0.0.1:{free_port()}", lazy=True)


class TestHealthz:
    async def test_alive_is_200_ok(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/healthz")
        assert response.status_code == 200 and response.json() == {"status": "ok"}


class TestReadyz:
    async def test_ready_when_store_and_temporal_answer_and_says_no_worker_polls(
        self, settings: Settings, store: Store, catalog: Catalog, temporal_env: WorkflowEnvironment
    ) -> None:
        # A queue no worker of the session polls: the API is ready all the same.
        lonely = settings.model_copy(update={"task_queue": f"tq-{uuid.uuid4()}"})
        async with api_client(lonely, store, catalog, temporal_env.client) as http:
            response = await http.get("/readyz")
        assert response.status_code == 200
        assert response.json() == {
            "status": "ready",
            "checks": {
                "store": "ok",
                "temporal": "ok",
                "workers": f"none polling task queue {lonely.task_queue!r} (TRELLIS_TASK_QUEUE);"
                " runs are accepted and wait until a worker polls",
            },
        }

    async def test_a_worker_polling_the_task_queue_is_ok(
        self, tmp_path: Path, temporal_env: WorkflowEnvironment
    ) -> None:
        async with (
            executor_registry() as registry,
            running_platform(temporal_env.client, tmp_path, registry) as platform,
        ):
            # The worker's first poll may not have reached the server yet.
            for _ in range(100):
                response = await platform.api.get("/readyz")
                if response.json()["checks"]["workers"] == "ok":
                    break
                await asyncio.sleep(0.05)
        assert response.status_code == 200
        assert response.json() == {
            "status": "ready",
            "checks": {"store": "ok", "temporal": "ok", "workers": "ok"},
        }

    async def test_closed_store_is_503_naming_the_store(
        self, client: httpx.AsyncClient, store: Store
    ) -> None:
        await store.close()
        response = await client.get("/readyz")
        assert_error(response, 503, "service_unavailable", "store")
        assert response.json()["error"]["details"] == [
            {"path": "store", "message": "not reachable (the API's log says why)"}
        ]

    @pytest.mark.parametrize("how", ["removed", "replaced"])
    async def test_a_store_file_removed_or_replaced_while_open_is_not_ready(
        self,
        client: httpx.AsyncClient,
        store: Store,
        how: str,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        # The open store went on reading and writing the file's old inode: /readyz said
        # "ok", and what was written meanwhile was gone at the next start.
        assert isinstance(store, SqliteStore)
        assert (await client.get("/readyz")).status_code == 200
        for part in store.path.parent.glob(store.path.name + "*"):
            part.unlink()
        if how == "replaced":
            sqlite3.connect(store.path).close()
        response = await client.get("/readyz")
        assert_error(response, 503, "service_unavailable", "store")
        assert f"SQLite store {store.path} was {how} while open" in caplog.text

    async def test_unreachable_temporal_is_503_naming_temporal_and_its_address(
        self, settings: Settings, store: Store, catalog: Catalog
    ) -> None:
        dead = await _dead_temporal()
        async with api_client(settings, store, catalog, dead) as http:
            response = await http.get("/readyz")
        assert_error(response, 503, "service_unavailable", "temporal")
        # What is down and where, not the SDK's own words about the failed dial.
        address = dead.service_client.config.target_host
        assert response.json()["error"]["details"] == [
            {"path": "temporal", "message": f"Temporal at {address} is unreachable"}
        ]

    async def test_temporal_gone_after_start_up_is_503_naming_it_and_its_address(
        self,
        settings: Settings,
        store: Store,
        catalog: Catalog,
        tmp_path: Path,
        processes: Processes,
    ) -> None:
        temporal, port = await own_temporal(processes, tmp_path / "temporal.db")
        address = f"127.0.0.1:{port}"
        async with api_client(settings, store, catalog, await Client.connect(address)) as http:
            assert (await http.get("/readyz")).status_code == 200
            temporal.kill()
            response = await http.get("/readyz")
        assert_error(response, 503, "service_unavailable", "temporal")
        message = f"Temporal at {address} is unreachable"
        assert response.json()["error"]["message"] == f"Not ready: temporal: {message}"
        assert response.json()["error"]["details"] == [{"path": "temporal", "message": message}]

    async def test_a_hung_temporal_is_503_within_the_checks_2_s(
        self,
        settings: Settings,
        store: Store,
        catalog: Catalog,
        tmp_path: Path,
        processes: Processes,
    ) -> None:
        # SIGSTOPped: the SDK's own timeout (CANCELLED "Timeout expired") read as a lost
        # connection, so the check was asked three times, 2 s each (/readyz took ~6.3 s).
        temporal, port = await own_temporal(processes, tmp_path / "temporal.db")
        address = f"127.0.0.1:{port}"
        async with api_client(settings, store, catalog, await Client.connect(address)) as http:
            assert (await http.get("/readyz")).status_code == 200
            with frozen(temporal.pid):
                started = time.monotonic()
                response = await http.get("/readyz", timeout=30)
                took = time.monotonic() - started
        assert_error(response, 503, "service_unavailable", "temporal")
        assert response.json()["error"]["details"] == [
            {"path": "temporal", "message": f"Temporal at {address} is unreachable"}
        ]
        assert took < 3.0, took

    async def test_a_namespace_the_cluster_lacks_is_503_naming_it(
        self, settings: Settings, store: Store, catalog: Catalog, temporal_env: WorkflowEnvironment
    ) -> None:
        # The health check passed and every trigger was refused (503) while /readyz said ok.
        config = {**temporal_env.client.config(), "namespace": "no-such-namespace"}
        async with api_client(settings, store, catalog, Client(**config)) as http:
            response = await http.get("/readyz")
        assert_error(response, 503, "service_unavailable", "temporal")
        assert response.json()["error"]["details"] == [
            {
                "path": "temporal",
                "message": "no namespace 'no-such-namespace' (TRELLIS_TEMPORAL_NAMESPACE)",
            }
        ]

    async def test_a_namespace_without_trellis_setup_is_503_naming_what_it_lacks(
        self, settings: Settings, store: Store, catalog: Catalog, temporal_env: WorkflowEnvironment
    ) -> None:
        # /readyz said ok, then every trigger was 503 (no such search attribute).
        namespace = await bare_namespace(temporal_env.client)
        config = {**temporal_env.client.config(), "namespace": namespace}
        address = temporal_env.client.service_client.config.target_host
        async with api_client(settings, store, catalog, Client(**config)) as http:
            response = await http.get("/readyz")
            assert_error(response, 503, "service_unavailable", "temporal")
            (detail,) = response.json()["error"]["details"]
            assert detail["message"] == (
                f"the namespace '{namespace}' at {address} lacks Trellis's search attributes "
                "TrellisDefinitionId, TrellisParentRunId, TrellisRunStatus, "
                "TrellisTriggerSource; run `trellis setup` with the same TRELLIS_TEMPORAL_* "
                "settings first"
            )
            await register_search_attributes(temporal_env.client, namespace)
            assert (await http.get("/readyz")).status_code == 200

    async def test_a_health_check_lost_with_its_connection_is_asked_again(
        self, settings: Settings, store: Store, catalog: Catalog, temporal_env: WorkflowEnvironment
    ) -> None:
        # Seen in CI: one check failed ("operation was canceled") as its connection went,
        # and /readyz said 503 although Temporal was up. Asked again, on a new connection.
        host, port = temporal_env.client.service_client.config.target_host.rsplit(":", 1)
        async with CuttingProxy(host, int(port)).running() as proxy:
            through_proxy = await Client.connect(
                proxy.address, namespace=temporal_env.client.namespace
            )
            async with api_client(settings, store, catalog, through_proxy) as http:
                assert (await http.get("/readyz")).status_code == 200
                proxy.armed = True
                response = await http.get("/readyz")
        assert proxy.cuts == 1
        assert response.status_code == 200, response.text

    async def test_both_down_names_both(
        self, settings: Settings, store: Store, catalog: Catalog
    ) -> None:
        async with api_client(settings, store, catalog, await _dead_temporal()) as http:
            await store.close()
            response = await http.get("/readyz")
        assert_error(response, 503, "service_unavailable", "store", "temporal")


class TestStartWithoutTemporal:
    def _serve_without_temporal(
        self, settings: Settings, store: Store, catalog: Catalog
    ) -> AbstractAsyncContextManager[str]:
        # No client given: the app dials the configured address itself, which is closed.
        down = settings.model_copy(update={"temporal_port": free_port()})
        return serving(create_app(down, store=store, catalog=catalog))

    async def test_api_starts_and_serves_definitions_while_temporal_is_down(
        self, settings: Settings, store: Store, catalog: Catalog
    ) -> None:
        async with (
            self._serve_without_temporal(settings, store, catalog) as base,
            httpx.AsyncClient(base_url=base) as http,
        ):
            created = await http.post(f"{API}/workflows", json=workflow("offline"))
            assert created.status_code == 201
            assert (await http.get(f"{API}/workflows")).json()["pagination"]["total"] == 1
            ready = await http.get("/readyz")
        assert_error(ready, 503, "service_unavailable", "temporal: Temporal at", "unreachable")
        assert ready.json()["error"]["message"].endswith("is unreachable")

    async def test_a_route_that_needs_temporal_is_503_while_it_is_down(
        self, settings: Settings, store: Store, catalog: Catalog
    ) -> None:
        async with (
            self._serve_without_temporal(settings, store, catalog) as base,
            httpx.AsyncClient(base_url=base) as http,
        ):
            created = (await http.post(f"{API}/workflows", json=workflow("offline"))).json()
            await http.post(f"{API}/workflows/{created['id']}/toggle", json={"enabled": True})
            response = await http.post(f"{API}/workflows/{created['id']}/runs", json={})
        assert_error(response, 503, "service_unavailable", "unreachable")

    async def test_the_session_server_is_what_readiness_checks(
        self, temporal_env: WorkflowEnvironment
    ) -> None:
        assert await temporal_env.client.service_client.check_health()
