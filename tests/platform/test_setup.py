"""`trellis setup` prepares a bare cluster and a store, and is safe to run again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from app.platform.devserver import temporal_binary
from app.settings import Settings
from app.setup import run_setup
from temporal_workflows import search_attributes
from tests.platform.conftest import run_trellis, trellis_env

OURS = sorted(key.name for key in search_attributes.ALL)


@pytest.fixture(scope="module")
async def bare_cluster() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server with none of our search attributes, like a freshly deployed cluster."""
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_binary())
    try:
        yield env
    finally:
        await env.shutdown()


def _settings(cluster: WorkflowEnvironment, tmp_path: Path) -> Settings:
    address = cluster.client.service_client.config.target_host
    return Settings(data_dir=tmp_path, temporal_address=address)


async def _custom_attributes(cluster: WorkflowEnvironment) -> set[str]:
    listed = await cluster.client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    return set(listed.custom_attributes)


async def test_setup_registers_our_search_attributes(
    bare_cluster: WorkflowEnvironment, tmp_path: Path
) -> None:
    await run_setup(_settings(bare_cluster, tmp_path), wait_seconds=5)
    assert set(OURS) <= await _custom_attributes(bare_cluster)


async def test_setup_run_twice_adds_nothing_and_succeeds(
    bare_cluster: WorkflowEnvironment, tmp_path: Path
) -> None:
    await run_setup(_settings(bare_cluster, tmp_path), wait_seconds=5)
    assert await run_setup(_settings(bare_cluster, tmp_path), wait_seconds=5) == []


async def test_setup_creates_the_store_schema(
    bare_cluster: WorkflowEnvironment, tmp_path: Path
) -> None:
    settings = _settings(bare_cluster, tmp_path)
    await run_setup(settings, wait_seconds=5)
    assert (tmp_path / "trellis.db").stat().st_size > 0


def test_setup_command_reports_an_unreachable_cluster(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS="127.0.0.1:1")
    result = run_trellis(["setup", "--wait", "0"], env)
    assert result.returncode != 0
    assert "cannot reach Temporal at 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_setup_never_prints_the_store_password(
    bare_cluster: WorkflowEnvironment, tmp_path: Path
) -> None:
    address = bare_cluster.client.service_client.config.target_host
    url = "mongodb://admin:s3cr3t-Pa55@127.0.0.1:9/trellis"  # nothing listens on port 9
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS=address, TRELLIS_STORE_URL=url)
    result = run_trellis(["setup", "--wait", "5"], env, timeout=60)
    assert result.returncode != 0
    assert "preparing the store mongodb://admin:***@127.0.0.1:9/trellis failed" in result.stderr
    assert "s3cr3t" not in result.stdout + result.stderr


def test_setup_never_prints_a_store_password_holding_a_slash(
    bare_cluster: WorkflowEnvironment, tmp_path: Path
) -> None:
    # Compose pastes MONGO_PASSWORD into the URL unescaped; `openssl rand -base64` makes `/`.
    address = bare_cluster.client.service_client.config.target_host
    url = "mongodb://trellis:Pa55/w0rd@127.0.0.1:9/trellis"
    env = trellis_env(
        tmp_path, TRELLIS_TEMPORAL_ADDRESS=address, TRELLIS_STORE_URL=url, TRELLIS_LOG_FORMAT="json"
    )
    result = run_trellis(["setup", "--wait", "5"], env, timeout=60)
    assert result.returncode == 1
    assert "preparing the store mongodb://trellis:***@127.0.0.1:9/trellis" in result.stderr
    assert "Pa55" not in result.stdout + result.stderr


def test_setup_on_an_unreachable_cluster_exits_1_with_one_line(tmp_path: Path) -> None:
    # The Temporal SDK's core could crash the interpreter's exit after a failed connect
    # (SIGABRT/SIGSEGV), more often on a busy machine: four at once, five times, so a
    # crash shows.
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS="127.0.0.1:1")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_trellis(["setup", "--wait", "0"], env), range(20)))
    for result in results:
        assert (result.returncode, result.stderr.count("\n")) == (1, 1), result.stderr
