"""The OpenAPI document tells the truth: Schemathesis, with every default check, over the
real API (store, Temporal, worker) in `jwt` mode finds nothing: no 5xx, no undocumented
status, no schema-valid request refused (but for the rules in schemathesis.toml), no
invalid one taken, no request without a valid token served.

Two passes, both bounded (schemathesis.toml): one from the document alone (ids it makes up,
links it follows), one aimed at a real workflow, run, gate and schedule, so requests reach
the logic behind the lookups. (tests/auth checks the 401/403 answers themselves.)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from tests.builders import echo
from tests.hitl.helpers import wait_for_gate
from tests.support.identity import SECRET, token
from tests.support.platform import Platform, running_platform

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("st")
SEED = "20261126"
# One caller with every scope: what it creates, it owns (and so may reach).
TOKEN = token("schemathesis", expires_in=3_600)


@pytest.fixture
async def platform(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Platform]:
    """The platform in `jwt` mode, its test client sending the token."""
    catalog = load_catalog(None)
    registry = ExecutorRegistry(catalog)
    try:
        async with running_platform(
            temporal_env.client,
            tmp_path,
            registry,
            settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as platform:
            yield platform
    finally:
        await registry.close()
        await catalog.close()


async def schemathesis(base_url: str, config: Path, workdir: Path, *extra: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        f"{base_url}/openapi.json",
        "--seed",
        SEED,
        "--workers",
        "1",
        "--no-color",
        "--header",
        f"Authorization: Bearer {TOKEN}",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=workdir,  # its cache (.schemathesis/) stays out of the repository
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


async def seed(platform: Platform) -> dict[str, Any]:
    """A workflow with a run waiting at a gate, a node run, and a (paused) schedule."""
    gate = echo("welcome", review={"requiresConfirmation": True})
    workflow_id = await platform.create({"nodes": [gate]})
    run_id = await platform.trigger(workflow_id, {"customerName": "Ada"})
    await wait_for_gate(platform, workflow_id, run_id, "welcome")
    nodes = (await platform.api.get(f"/api/v1/workflows/{workflow_id}/runs/{run_id}/nodes")).json()
    schedule = await platform.api.post(
        f"/api/v1/workflows/{workflow_id}/schedules",
        json={"intervalSeconds": 86_400, "paused": True},
    )
    assert schedule.status_code == 201, schedule.text
    return {
        "workflow_id": workflow_id,
        "run_id": run_id,
        "node_run_id": nodes["nodeRuns"][0]["id"],
        "node_id": "welcome",
        "schedule_id": schedule.json()["id"],
        "version": 1,
    }


def failures(output: str) -> str:
    """What Schemathesis found (its FAILURES and ERRORS sections), for the assertion."""
    start = min(
        (i for i in (output.find("= ERRORS ="), output.find("= FAILURES =")) if i >= 0), default=0
    )
    return output[start : start + 12_000]


def aimed_at(resources: dict[str, Any], directory: Path) -> Path:
    """The config with every path id fixed to a real resource."""
    lines = [f"{name} = {value!r}".replace("'", '"') for name, value in resources.items()]
    path = directory / "schemathesis.toml"
    path.write_text(
        CONFIG.read_text(encoding="utf-8").replace(
            "[generation]", "[parameters]\n" + "\n".join(lines) + "\n\n[generation]", 1
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.long
async def test_schemathesis_finds_no_failure(platform: Platform, tmp_path: Path) -> None:
    base_url = str(platform.api.base_url).rstrip("/")
    resources = await seed(platform)

    workdir = tmp_path / "schemathesis"
    workdir.mkdir()
    code, output = await schemathesis(base_url, CONFIG, workdir)
    assert code == 0, failures(output)

    # Deleting the workflow would leave the rest nothing to reach; deletion is in pass one.
    # No stateful phase here: its links would be overridden by the fixed ids (pass one
    # follows them).
    aimed = aimed_at(resources, workdir)
    code, output = await schemathesis(
        base_url,
        aimed,
        workdir,
        "--exclude-operation-id",
        "deleteWorkflow",
        "--phases",
        "examples,coverage,fuzzing",
    )
    assert code == 0, failures(output)
