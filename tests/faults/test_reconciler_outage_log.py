"""While Temporal is down, the reconciler says so in one warning line when the outage starts,
naming the address and the cause, then only a reminder at a long interval, and once at INFO
when it ends; only an unexpected failure is logged with its traceback. The firings' payload
sweep deletes nothing meanwhile (one line each failed sweep, as the run retention's), and
deletes what is due once Temporal answers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from temporalio.client import Client
from temporalio.service import RetryConfig
from temporalio.testing import WorkflowEnvironment

from activities.metrics import RunMetrics
from activities.store.base import PayloadHolder
from activities.store.sqlite import SqliteStore
from app.firing_payloads import FiringPayloads
from app.reconciler import Reconciler
from tests.support.own_temporal import own_temporal, start_temporal
from tests.support.polling import eventually
from tests.support.processes import Processes
from tests.support.server import free_port

LOGGER = "trellis.reconciler"
# Few, quick retries: a pass against a dead server fails in well under a second.
QUICK = RetryConfig(initial_interval_millis=50, max_interval_millis=100, max_retries=2)


@contextlib.asynccontextmanager
async def reconciling(
    client: Client, store: SqliteStore, *, reminder: timedelta | None = None
) -> AsyncIterator[None]:
    shortened = {} if reminder is None else {"outage_reminder": reminder}
    reconciler = Reconciler(client, store, task_queue="outage", interval=0.1, **shortened)
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        yield
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore(tmp_path / "trellis.db")
    await store.connect()
    yield store
    await store.close()


def reconciler_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def assert_one_line_warnings(records: list[logging.LogRecord], address: str) -> None:
    assert records
    for record in records:
        assert record.levelno == logging.WARNING, record.getMessage()
        assert record.exc_info is None, record.getMessage()
        message = record.getMessage()
        assert "\n" not in message
        assert f"Temporal at {address} is unreachable" in message
        assert "Connection refused" in message or "tcp connect error" in message, message


async def test_a_long_outage_is_one_warning_not_one_per_pass(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    client = await Client.connect(address, lazy=True, retry_config=QUICK)
    caplog.set_level(logging.INFO, logger=LOGGER)
    passes = failed_passes(client)
    async with reconciling(client, store):
        await eventually(lambda: passes() >= 10, within=30)
    (warning,) = reconciler_records(caplog)
    assert_one_line_warnings([warning], address)
    assert warning.getMessage().startswith("reconciliation paused: ")
    assert "retrying every 0.1s, reminding every 300s" in warning.getMessage()


async def test_a_long_outage_is_reminded_at_the_reminder_interval(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    address = f"127.0.0.1:{free_port()}"
    client = await Client.connect(address, lazy=True, retry_config=QUICK)
    caplog.set_level(logging.INFO, logger=LOGGER)
    passes = failed_passes(client)
    async with reconciling(client, store, reminder=timedelta(seconds=1)):
        await eventually(lambda: len(reconciler_records(caplog)) >= 2, within=30)
        await asyncio.sleep(0.5)
    records = reconciler_records(caplog)
    assert passes() > 2 * len(records)  # far fewer lines than passes
    assert_one_line_warnings(records, address)
    first, reminder = records[:2]
    assert first.getMessage().startswith("reconciliation paused: ")
    assert reminder.getMessage().startswith(
        f"reconciliation still paused: Temporal at {address} is unreachable for "
    )
    assert reminder.created - first.created >= 1


def failed_passes(client: Client) -> Callable[[], int]:
    """Count the reconciler's calls to Temporal (each pass makes one first)."""
    calls = 0
    original = client.list_workflows

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(*args, **kwargs)

    client.list_workflows = counting  # type: ignore[method-assign]
    return lambda: calls


async def test_temporal_going_away_is_one_warning_and_its_return_is_said(
    tmp_path: Path,
    processes: Processes,
    store: SqliteStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db_file = tmp_path / "temporal.db"
    temporal, port = await own_temporal(processes, db_file)
    address = f"127.0.0.1:{port}"
    client = await Client.connect(address, retry_config=QUICK)
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with reconciling(client, store):
        await asyncio.sleep(0.5)
        assert reconciler_records(caplog) == []  # passes that work say nothing
        temporal.kill()
        await eventually(lambda: reconciler_records(caplog), within=30)
        await asyncio.sleep(1)  # more failed passes: still the one warning
        (warning,) = reconciler_records(caplog)
        assert_one_line_warnings([warning], address)
        caplog.clear()
        await start_temporal(processes, port, db_file)
        await eventually(lambda: infos(caplog), within=60)
        await asyncio.sleep(0.5)
    (back,) = infos(caplog)  # said once; the passes after it say nothing
    assert back.getMessage().startswith(
        f"reconciliation resumed: Temporal at {address} answers again (unreachable for "
    )
    assert reconciler_records(caplog)[-1] is back


async def test_the_firings_payload_sweep_deletes_nothing_until_temporal_answers(
    tmp_path: Path,
    processes: Processes,
    store: SqliteStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # It cannot tell a firing's workflow closed: it fails as the run retention's sweep
    # fails (one line, no traceback), and the next sweep once Temporal is back deletes.
    db_file = tmp_path / "temporal.db"
    temporal, port = await own_temporal(processes, db_file)
    client = await Client.connect(f"127.0.0.1:{port}", retry_config=QUICK)
    # A workflow Temporal does not know: closed, once it says so.
    await store.put_payload("request", b"r" * 300_000, "sched-x-run-1", PayloadHolder.FIRING)
    temporal.kill()
    caplog.set_level(logging.INFO, logger=LOGGER)
    metrics = RunMetrics(CollectorRegistry())
    sweep = FiringPayloads(client, store, metrics, keep_for=timedelta(0), every=timedelta(0))
    reconciler = Reconciler(
        client, store, task_queue="outage", interval=0.1, metrics=metrics, firing_payloads=sweep
    )
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        await eventually(lambda: len(sweep_lines(caplog)) >= 3, within=30)
        assert await store.get_payload("request") is not None
        for record in sweep_lines(caplog):
            assert record.levelno == logging.WARNING and record.exc_info is None
            message = record.getMessage()
            assert message.startswith(
                "firings' payload sweep failed (tried again at its next sweep, within 10 min): "
            )
            assert "\n" not in message
            assert "Connection refused" in message or "tcp connect error" in message, message
        await start_temporal(processes, port, db_file)
        await eventually(lambda: _gone(store, "request"), within=60)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert any(
        r.getMessage().startswith("deleted 1 large payload(s) of schedule firings made before")
        for r in reconciler_records(caplog)
    )


def sweep_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in reconciler_records(caplog) if "payload sweep" in r.getMessage()]


async def _gone(store: SqliteStore, key: str) -> bool:
    return await store.get_payload(key) is None


def infos(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in reconciler_records(caplog) if r.levelno == logging.INFO]


async def test_an_unexpected_failure_keeps_its_traceback(
    temporal_env: WorkflowEnvironment, store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    await store.close()  # Temporal answers; the store does not: not an outage of Temporal
    caplog.set_level(logging.INFO, logger=LOGGER)
    async with reconciling(temporal_env.client, store):
        await eventually(lambda: reconciler_records(caplog))
    record = reconciler_records(caplog)[0]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "reconciliation pass failed"
    assert record.exc_info is not None
