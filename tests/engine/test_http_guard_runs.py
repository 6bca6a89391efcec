"""A worker whose builtin:http is not allowed to reach the peer: the step fails at once,
naming the address and the setting, and the peer never hears from it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.builders import http_step, retries
from tests.support.platform import Platform, running_platform


@pytest.fixture
async def guarded(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Platform]:
    """A platform configured as by default: no TRELLIS_HTTP_ALLOWED_NETWORKS."""
    catalog = load_catalog(None)
    registry = ExecutorRegistry(catalog)
    try:
        async with running_platform(temporal_env.client, tmp_path, registry) as platform:
            yield platform
    finally:
        await registry.close()
        await catalog.close()


async def test_a_step_calling_a_loopback_url_fails_without_retrying(guarded: Platform) -> None:
    url = f"{guarded.peer_url}/echo/guarded"
    run = await guarded.run({"nodes": [http_step("call", url, stepConfig=retries(3))]})
    assert run["status"] == "failed"
    [node] = run["nodeRuns"]
    assert node["attempt"] == 1
    assert "builtin:http may not connect to 127.0.0.1: its address is loopback" in node["error"]
    assert "TRELLIS_HTTP_ALLOWED_NETWORKS" in run["errorSummary"]
    assert guarded.peer.calls["guarded"] == 0


async def test_a_template_cannot_smuggle_in_cloud_metadata(guarded: Platform) -> None:
    definition = {"nodes": [http_step("call", "{{ input.target }}")]}
    run = await guarded.run(definition, {"target": "http://169.254.169.254/latest/meta-data/"})
    assert run["status"] == "failed"
    assert "169.254.169.254: its address is link-local" in run["nodeRuns"][0]["error"]
