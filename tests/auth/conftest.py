"""An API in `jwt` mode over real HTTP (SQLite in tmp_path, the session Temporal)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog, load_catalog
from activities.store.base import Store
from activities.store.factory import open_store
from app.settings import Settings
from tests.support.identity import ALICE_HEADERS, SECRET, jwt_settings, serve_api
from tests.support.platform import Platform, executor_registry, running_platform


@pytest.fixture(scope="session")
def builtins_catalog() -> Catalog:
    return load_catalog(None)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return jwt_settings(tmp_path)


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = open_store(settings.resolved_store_url)
    await opened.connect()
    yield opened
    await opened.close()


@pytest.fixture
async def api(
    settings: Settings,
    store: Store,
    builtins_catalog: Catalog,
    temporal_env: WorkflowEnvironment,
) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_api(settings, store, builtins_catalog, temporal_env.client) as http:
        yield http


@pytest.fixture
async def dev_api(
    tmp_path: Path, store: Store, builtins_catalog: Catalog, temporal_env: WorkflowEnvironment
) -> AsyncIterator[httpx.AsyncClient]:
    """The same app in `dev` mode (the default)."""
    settings = Settings(data_dir=tmp_path)
    async with serve_api(settings, store, builtins_catalog, temporal_env.client) as http:
        yield http


@pytest.fixture
async def jwt_platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Platform]:
    """A whole platform (worker included) in `jwt` mode; its client calls as ALICE."""
    async with (
        executor_registry() as registry,
        running_platform(
            temporal_env.client,
            tmp_path,
            registry,
            settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
            headers=ALICE_HEADERS,
        ) as platform,
    ):
        yield platform
