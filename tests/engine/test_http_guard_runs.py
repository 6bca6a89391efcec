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


async def test_an_uppercase_scheme_is_http_and_guarded_as_it(guarded: Platform) -> None:
    # Schemes are case-insensitive: `HTTP://` was refused as "not an http(s) URL".
    url = guarded.peer_url.replace("http://", "HTTP://") + "/echo/upper"
    run = await guarded.run({"nodes": [http_step("call", url)]})
    assert run["status"] == "failed"
    assert "may not connect to 127.0.0.1: its address is loopback" in run["nodeRuns"][0]["error"]
    assert guarded.peer.calls["upper"] == 0


async def test_an_uppercase_scheme_reaches_an_allowed_address(platform: Platform) -> None:
    url = platform.peer_url.replace("http://", "HTTP://") + "/echo/upper"
    run = await platform.run({"nodes": [http_step("call", url)]})
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"]["status"] == 200 and platform.peer.calls["upper"] == 1


async def test_a_host_no_idna_encoding_takes_is_a_clear_permanent_error(
    guarded: Platform,
) -> None:
    # It failed with the IDNA library's bare words, naming neither builtin:http nor the URL.
    run = await guarded.run(
        {"nodes": [http_step("call", "http://xn--localhost/", stepConfig=retries(3))]}
    )
    assert run["status"] == "failed"
    [node] = run["nodeRuns"]
    assert node["attempt"] == 1
    assert node["error"].startswith(
        "builtin:http config.url 'http://xn--localhost/' is invalid: Codepoint U+0C0D"
    ), node["error"]
