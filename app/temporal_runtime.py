"""The Temporal SDK's runtime: its Rust core logs through our logging, like every library.

Left to its defaults, the core writes its own lines straight to stderr (ANSI-coloured
text, even with `TRELLIS_LOG_FORMAT=json`, and past our secret masking). It writes them
exactly when an operator reads the logs most: while Temporal is down or restarting
("gRPC call … retried 6 times"). Forwarded, each is a record of the `temporalio.core`
logger, formatted and masked as any other line.
"""

from __future__ import annotations

import functools
import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

CORE_LOGGER = "temporalio.core"


def sdk_telemetry(metrics: PrometheusConfig | None = None) -> TelemetryConfig:
    """The SDK's default levels (core WARN, the rest ERROR), forwarded to our logging."""
    forwarding = LogForwardingConfig(
        logger=logging.getLogger(CORE_LOGGER), append_target_to_name=False
    )
    logs = LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"), forwarding=forwarding
    )
    return TelemetryConfig(logging=logs, metrics=metrics)


@functools.cache
def forwarding_runtime() -> Runtime:
    """One runtime per process (each runs its own thread pool) for clients without metrics."""
    return Runtime(telemetry=sdk_telemetry())
