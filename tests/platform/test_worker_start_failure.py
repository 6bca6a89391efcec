"""A worker that cannot start says so and exits: nothing it opened keeps it alive."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from app.setup import missing_search_attributes
from temporal_workflows import search_attributes
from tests.platform.conftest import REPO, run_trellis, trellis_env
from tests.support.bare_namespace import bare_namespace
from tests.support.server import free_port

OURS = sorted(key.name for key in search_attributes.ALL)


def test_a_worker_that_cannot_reach_temporal_exits_non_zero(tmp_path: Path) -> None:
    # The store and the catalog are open by then; they held the process alive (and deaf
    # to SIGTERM) before start-up closed them on failure too.
    port = free_port()  # nothing listens there
    env = trellis_env(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker", "--temporal-port", str(port)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()  # one line, no traceback
    assert line.startswith(
        f"trellis worker: cannot reach Temporal at 127.0.0.1:{port} "
        "(--temporal-port / TRELLIS_TEMPORAL_PORT): "
    )


def test_a_worker_that_cannot_reach_its_cluster_names_the_address_setting(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"trellis worker: cannot reach Temporal at {env['TRELLIS_TEMPORAL_ADDRESS']} "
        "(--temporal-address / TRELLIS_TEMPORAL_ADDRESS): "
    )


def test_a_worker_on_a_namespace_the_cluster_lacks_says_so_and_exits(
    tmp_path: Path, temporal_env: WorkflowEnvironment
) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = trellis_env(
        tmp_path, TRELLIS_TEMPORAL_ADDRESS=address, TRELLIS_TEMPORAL_NAMESPACE="no-such-namespace"
    )
    ready = tmp_path / "worker.ready"
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker", "--ready-file", str(ready)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"trellis worker: Temporal at {address} has no namespace 'no-such-namespace' "
        "(--temporal-namespace / TRELLIS_TEMPORAL_NAMESPACE)"
    ]
    assert not ready.exists()


def test_a_worker_that_cannot_reach_its_store_says_so_in_one_line(tmp_path: Path) -> None:
    # MongoDB gives up after its 5 s server selection; the password never shows.
    url = f"mongodb://trellis:s3cret-pw@127.0.0.1:{free_port()}/trellis"
    env = trellis_env(tmp_path, TRELLIS_STORE_URL=url)
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()  # one line, no traceback
    assert line.startswith(
        "trellis worker: cannot reach the store at mongodb://trellis:***@127.0.0.1:"
    )
    assert "(--store-url / TRELLIS_STORE_URL): MongoDB store unavailable" in line
    assert "s3cret-pw" not in line


async def test_a_worker_on_a_namespace_without_trellis_setup_says_so_and_exits(
    tmp_path: Path, temporal_env: WorkflowEnvironment
) -> None:
    # It said it was ready; every trigger was then 503 and the reconciler logged a
    # traceback every 5 s.
    namespace = await bare_namespace(temporal_env.client)
    address = temporal_env.client.service_client.config.target_host
    env = trellis_env(
        tmp_path, TRELLIS_TEMPORAL_ADDRESS=address, TRELLIS_TEMPORAL_NAMESPACE=namespace
    )
    ready = tmp_path / "worker.ready"
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "worker", "--ready-file", str(ready)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"trellis worker: the namespace '{namespace}' at {address} lacks Trellis's search "
        f"attributes {', '.join(OURS)}; run `trellis setup` with the same TRELLIS_TEMPORAL_* "
        "settings first"
    ]
    assert not ready.exists()
    # `trellis setup` adds them: the worker's check then finds none missing.
    setup = await asyncio.to_thread(run_trellis, ["setup", "--wait", "5"], env)
    assert setup.returncode == 0, setup.stderr
    assert await missing_search_attributes(temporal_env.client, namespace) == []
