"""A platform whose worker counts into a registry the test reads (one per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from temporalio.testing import WorkflowEnvironment

from activities.metrics import RunMetrics
from tests.support.platform import Platform, executor_registry, running_platform


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
    registry = CollectorRegistry()
    metrics = RunMetrics(registry)
    async with (
        executor_registry() as executors,
        running_platform(temporal_env.client, tmp_path, executors, run_metrics=metrics) as p,
    ):
        yield Metered(p, registry, metrics)
