"""A platform whose worker counts into a registry the test reads (one per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from activities.metrics import RunMetrics
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.platform import Platform, running_platform


@dataclass
class Metered:
    platform: Platform
    registry: CollectorRegistry
    metrics: RunMetrics

    def value(self, name: str, **labels: str) -> float:
        """A sample's value now (0 when it has none yet)."""
        return self.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def metered(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Metered]:
    catalog = load_catalog(None)
    await catalog.start()
    executors = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED)
    registry = CollectorRegistry()
    metrics = RunMetrics(registry)
    try:
        async with running_platform(
            temporal_env.client, tmp_path, executors, run_metrics=metrics
        ) as platform:
            yield Metered(platform, registry, metrics)
    finally:
        await executors.close()
        await catalog.close()
