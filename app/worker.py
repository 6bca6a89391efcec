"""The worker process: polls the task queue, runs the interpreter and its activities."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from activities.executors.base import Executor
from activities.metrics import RunMetrics
from activities.projections import ProjectionActivities
from activities.scheduling import SchedulingActivities
from activities.steps import StepActivities
from activities.store.base import Store, StoreError
from app.sandbox import CompiledSandboxRunner
from app.settings import Settings
from app.startup_failure import StartupFailure
from temporal_workflows.interpreter import TrellisRun
from temporal_workflows.json_data import DEFAULT_MAX_OUTPUT_BYTES
from temporal_workflows.schedule_trigger import ScheduleTrigger

log = logging.getLogger("trellis.worker")


class WorkerStartError(StartupFailure):
    """The worker cannot start; the message says what it could not reach and which setting."""


# Concurrency limits of the worker (the benchmark gives its hand-written worker the same).
WORKER_LIMITS: dict[str, Any] = {
    "max_concurrent_activities": 200,
    "max_concurrent_local_activities": 200,
}


def build_worker(
    client: Client,
    *,
    task_queue: str,
    store: Store,
    executor: Executor,
    extra_activities: Sequence[Any] = (),
    shutdown_grace: timedelta = timedelta(0),
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    max_cached_workflows: int = 1000,
    metrics: RunMetrics | None = None,
) -> Worker:
    """A worker running the interpreter workflow and every activity it names."""
    steps = StepActivities(store, executor, max_output_bytes=max_output_bytes, metrics=metrics)
    projections = ProjectionActivities(store, metrics)
    scheduling = SchedulingActivities(store, client, max_output_bytes)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[TrellisRun, ScheduleTrigger],
        activities=[*steps.all(), *projections.all(), *scheduling.all(), *extra_activities],
        **WORKER_LIMITS,
        workflow_runner=CompiledSandboxRunner(),
        # Heartbeats carry cancellation to a running step: send them often enough that a
        # cancelled run stops its executors within about a second.
        max_heartbeat_throttle_interval=timedelta(seconds=1),
        default_heartbeat_throttle_interval=timedelta(seconds=1),
        # On shutdown, in-flight activities get this long to finish before they are
        # cancelled (and retried by another worker): a deploy need not redo tool calls.
        graceful_shutdown_timeout=shutdown_grace,
        max_cached_workflows=max_cached_workflows,
    )


async def run_worker(
    settings: Settings,
    *,
    ready: asyncio.Event | None = None,
    tracer_provider: TracerProvider | None = None,
) -> None:
    """Connect everything from settings and poll until cancelled (traced, given a provider)."""
    from activities.a2a_task_sweep import AbandonedA2ATasks
    from activities.executors.registry import ExecutorRegistry
    from activities.executors.tracing import TRACER_NAME
    from activities.store.factory import open_store
    from app.a2a_task_sweep import sweep_forever
    from app.outbound import executor_catalog, http_policy, service_token_signer
    from app.platform.preflight import store_unreachable
    from app.reconciler import Reconciler
    from app.temporal import connect_temporal
    from app.tracing import temporal_interceptors
    from app.worker_metrics import WorkerMetrics

    catalog = executor_catalog(settings)
    store = open_store(settings.resolved_store_url)
    try:
        await store.connect()
    except StoreError as exc:
        # One line, as for Temporal: a supervisor restarts the worker once the store answers
        # (a SQLite file that cannot be opened too, not only a server that does not answer).
        raise WorkerStartError(store_unreachable(settings, exc)) from None
    registry: ExecutorRegistry | None = None
    metrics: WorkerMetrics | None = None
    # Whatever start-up opened is closed however it ends: an open store and catalog (their
    # thread and tasks) kept a worker that could not reach Temporal alive, deaf to SIGTERM.
    try:
        await catalog.start()
        registry = ExecutorRegistry(
            catalog,
            http_policy=http_policy(settings),
            service_tokens=service_token_signer(settings),
            tracer=tracer_provider.get_tracer(TRACER_NAME) if tracer_provider else None,
        )
        metrics = WorkerMetrics.serve(settings.worker_metrics_host, settings.worker_metrics_port)
        try:
            client = await connect_temporal(
                settings,
                store,
                runtime=metrics.runtime,
                interceptors=temporal_interceptors(tracer_provider),
            )
        except Exception as exc:  # the SDK reports a refused dial as RuntimeError
            raise WorkerStartError(_unreachable(settings, exc)) from None
        await _require_namespace(client, settings)
        await _require_search_attributes(client, settings)
        worker = build_worker(
            client,
            task_queue=settings.task_queue,
            store=store,
            executor=registry,
            shutdown_grace=timedelta(seconds=settings.worker_shutdown_grace_seconds),
            max_output_bytes=settings.max_payload_bytes,
            max_cached_workflows=settings.worker_max_cached_workflows,
            metrics=metrics.run_metrics,
        )
        reconciler = Reconciler(
            client,
            store,
            task_queue=settings.task_queue,
            interval=settings.reconcile_interval_seconds,
            metrics=metrics.run_metrics,
            max_output_bytes=settings.max_payload_bytes,
            run_retention=settings.run_retention,
        )
        abandoned = AbandonedA2ATasks(store, registry.a2a)
        async with worker:
            reconcile = asyncio.create_task(reconciler.run_forever())
            # A2A tasks left running by steps whose worker was lost (a run cancelled meanwhile).
            every = timedelta(seconds=settings.a2a_task_sweep_seconds)
            sweep = asyncio.create_task(sweep_forever(abandoned, every))
            log.info("worker polling task queue %s", settings.task_queue)
            if ready is not None:
                ready.set()
            try:
                await asyncio.Event().wait()
            finally:
                reconcile.cancel()
                sweep.cancel()
                # Its port freed before the graceful drain (up to the shutdown grace): a
                # worker started at once in its place (`trellis dev` killed and restarted)
                # found the port taken and refused to start.
                await asyncio.to_thread(metrics.close)
    finally:
        if metrics is not None:
            metrics.close()
        if registry is not None:
            await registry.close()
        await catalog.close()
        await store.close()


def _unreachable(settings: Settings, exc: Exception) -> str:
    setting = (
        "--temporal-address / TRELLIS_TEMPORAL_ADDRESS"
        if settings.temporal_address
        else "--temporal-port / TRELLIS_TEMPORAL_PORT"
    )
    from app.temporal_tls import untrusted_hint

    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"cannot reach Temporal at {settings.resolved_temporal_address} ({setting}): "
        f"{reason}{untrusted_hint(reason)}"
    )


async def _require_namespace(client: Client, settings: Settings) -> None:
    """Fail in one line on a namespace the cluster lacks; the SDK's worker reported it as a
    traceback only once it had started polling (and said it was ready)."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=settings.temporal_namespace)
        )
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            return  # not ours to judge: the SDK's own validation reports it, as before
        raise WorkerStartError(
            f"Temporal at {settings.resolved_temporal_address} has no namespace "
            f"{settings.temporal_namespace!r} (--temporal-namespace / TRELLIS_TEMPORAL_NAMESPACE)"
        ) from None


async def _require_search_attributes(client: Client, settings: Settings) -> None:
    """Fail in one line on a namespace without our search attributes (`trellis setup` not
    run): the worker said it was ready, then every run failed to start and the reconciler
    logged a traceback every few seconds."""
    from app.setup import missing_search_attributes, search_attributes_missing

    try:
        missing = await missing_search_attributes(client, settings.temporal_namespace)
    except RPCError:
        return  # a key that may not list them: not taken as missing, runs may still work
    if missing:
        raise WorkerStartError(
            search_attributes_missing(
                settings.temporal_namespace, settings.resolved_temporal_address, missing
            )
        )
