"""`trellis dev` end to end: start, serve, stop cleanly, start again with everything kept."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from tests.platform.conftest import REPO, DevProcess, alive, trellis_env

WORKFLOW = {
    "name": "Platform lifecycle check",
    "description": "created by tests/platform",
    "nodes": [{"name": "Say hello", "nodeType": "step", "executorKey": "builtin:echo"}],
}
PARKED_QUEUE = "parked-no-worker"


@dataclass
class FirstRun:
    """What one full start → use → SIGTERM cycle observed."""

    dev: DevProcess
    healthz: int
    readyz: int
    workflow_id: str
    parked_workflow_id: str
    children: dict[str, int]
    exit_code: int
    stop_seconds: float
    http_api: int | str  # the dev server's HTTP API at TRELLIS_TEMPORAL_HTTP_API_PORT


def _http_api(port: str) -> int | str:
    """What Temporal's HTTP API at `port` answers a namespace list with."""
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/namespaces", timeout=5).status_code
    except httpx.HTTPError as exc:
        return repr(exc)


async def _park_workflow(address: str) -> str:
    """Start a workflow on a queue no worker polls: it stays running until someone acts."""
    client = await Client.connect(address)
    handle = await client.start_workflow(
        "NobodyRunsThis", id=f"parked-{time.time_ns()}", task_queue=PARKED_QUEUE
    )
    return handle.id


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstRun]:
    env = trellis_env(tmp_path_factory.mktemp("data"))
    dev = DevProcess.start(env)
    try:
        dev.wait_ready()
        children = dev.children()
        healthz = httpx.get(f"{dev.api_url}/healthz").status_code
        readyz = httpx.get(f"{dev.api_url}/readyz").status_code
        created = httpx.post(f"{dev.api_url}/api/v1/workflows", json=WORKFLOW)
        assert created.status_code == 201, created.text
        parked = asyncio.run(_park_workflow(dev.temporal_address))
        http_api = _http_api(env["TRELLIS_TEMPORAL_HTTP_API_PORT"])
        began = time.monotonic()
        code = dev.stop(signal.SIGTERM)
        yield FirstRun(
            dev,
            healthz,
            readyz,
            created.json()["id"],
            parked,
            children,
            code,
            time.monotonic() - began,
            http_api,
        )
    finally:
        dev.kill_everything()


@pytest.fixture(scope="module")
def second_run(first_run: FirstRun) -> Iterator[DevProcess]:
    env = dict(first_run.dev.env)  # same data dir, same ports
    dev = DevProcess.start(env)
    try:
        dev.wait_ready()
        yield dev
    finally:
        dev.stop(signal.SIGTERM)
        dev.kill_everything()


def test_dev_prints_the_api_docs_and_web_ui_urls(first_run: FirstRun) -> None:
    env = first_run.dev.env
    assert f"http://127.0.0.1:{env['TRELLIS_API_PORT']}/docs" in first_run.dev.output
    assert f"http://127.0.0.1:{env['TRELLIS_API_PORT']}/console/" in first_run.dev.output
    assert f"http://127.0.0.1:{env['TRELLIS_UI_PORT']}" in first_run.dev.output


def test_the_dev_servers_http_api_is_on_its_configured_port(first_run: FirstRun) -> None:
    # It was a free port the dev server picked at each start: nothing could name it.
    assert first_run.http_api == 200


def test_dev_supervises_temporal_worker_and_api(first_run: FirstRun) -> None:
    assert set(first_run.children) == {"temporal", "worker", "api"}


def test_dev_answers_health_and_readiness(first_run: FirstRun) -> None:
    assert (first_run.healthz, first_run.readyz) == (200, 200)


def test_sigterm_stops_dev_with_exit_code_zero_within_seconds(first_run: FirstRun) -> None:
    assert first_run.exit_code == 0, first_run.dev.output
    assert first_run.stop_seconds < 15


def test_sigterm_leaves_no_process_behind(first_run: FirstRun) -> None:
    left = {role: pid for role, pid in first_run.children.items() if alive(pid)}
    assert left == {}


def test_restart_on_the_same_data_dir_keeps_definitions(
    first_run: FirstRun, second_run: DevProcess
) -> None:
    got = httpx.get(f"{second_run.api_url}/api/v1/workflows/{first_run.workflow_id}")
    assert got.status_code == 200
    assert got.json()["name"] == WORKFLOW["name"]


async def test_restart_on_the_same_data_dir_keeps_running_temporal_workflows(
    first_run: FirstRun, second_run: DevProcess
) -> None:
    client = await Client.connect(second_run.temporal_address)
    handle = client.get_workflow_handle(first_run.parked_workflow_id)
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    await handle.terminate("test done")


def test_readme_quickstart_runs_a_workflow_to_completion(second_run: DevProcess) -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    script = block.replace("http://127.0.0.1:8000", second_run.api_url)
    result = subprocess.run(["bash", "-euc", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '"status": "completed"' in result.stdout
    assert '"greeting": "Hello, Ada!"' in result.stdout
    # Run again, as the README says a user may: step 1's 409 is shown, not a traceback.
    again = subprocess.run(["bash", "-euc", script], capture_output=True, text=True, timeout=60)
    assert again.returncode != 0
    assert "A workflow named 'Hello Trellis' already exists" in again.stderr
    assert "Traceback" not in again.stderr


def test_the_api_process_serves_the_console(second_run: DevProcess) -> None:
    page = httpx.get(f"{second_run.api_url}/console/approvals")
    assert page.status_code == 200 and "/console/assets/app.js" in page.text
    script = httpx.get(f"{second_run.api_url}/console/assets/app.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
