"""Every metric docs/operations.md lists is served, after real runs, by the target it names
(`trellis api`, `trellis worker` as processes), with exactly the labels it names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from temporalio.testing import WorkflowEnvironment

from tests.builders import delay, echo, http_step
from tests.support.api_runs import create_and_trigger, wait_for
from tests.support.processes import Processes
from tests.support.server import free_port

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
TERMINAL = {"completed", "failed", "cancelled"}


def documented_metrics() -> list[tuple[str, str, set[str] | None]]:
    """(name, target, labels) of each metric row in the Metrics section (None: Temporal's)."""
    section = OPERATIONS.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (\w+) \| ([^|]+) \| (API|worker) \|", section, re.M)
    found = []
    for name, _kind, labels, target in rows:
        cell = labels.strip()
        names = None if cell == "Temporal's" else set(re.findall(r"`(\w+)`", cell))
        found.append((name, target, names))
    return found


def served(text: str) -> dict[str, set[str]]:
    """Each sample name served, with the label names its samples carry (besides `le`)."""
    names: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(set(sample.labels) - {"le"})
    return names


def find(served_names: dict[str, set[str]], name: str) -> set[str] | None:
    """The labels of a counter or gauge `name`, or of a histogram's `name_count`."""
    for candidate in (name, f"{name}_count"):
        if candidate in served_names:
            return served_names[candidate]
    return None


async def run_to_end(api: httpx.AsyncClient, nodes: list[dict[str, Any]]) -> tuple[str, str]:
    wf, run_id = await create_and_trigger(api, {"nodes": nodes})
    await wait_for(api, wf, run_id, lambda r: r["status"] in TERMINAL)
    return wf, run_id


async def test_every_documented_metric_is_served_after_real_runs(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    api_process, worker_metrics = await processes.api_and_metered_worker(
        tmp_path, temporal_env.client.service_client.config.target_host
    )
    gate = echo("send", {"requiresConfirmation": True})
    async with httpx.AsyncClient(base_url=api_process.url, timeout=10) as api:
        await run_to_end(api, [delay("step", 0.05)])
        # Loopback is not an allowed network here: a permanent failure.
        await run_to_end(api, [http_step("refused", f"http://127.0.0.1:{free_port()}/")])
        wf, cancelled = await create_and_trigger(api, {"nodes": [delay("slow", 30)]})
        await wait_for(api, wf, cancelled, lambda r: r["nodeRuns"])
        assert (await api.post(f"/api/v1/workflows/{wf}/runs/{cancelled}/cancel")).is_success
        await wait_for(api, wf, cancelled, lambda r: r["status"] == "cancelled")
        for _ in range(2):  # one gate decided, one left open
            wf, run_id = await create_and_trigger(api, {"nodes": [gate]})
            await wait_for(api, wf, run_id, lambda r: r["pendingRequirements"])
        decided = await api.post(
            f"/api/v1/workflows/{wf}/runs/{run_id}/approve",
            json={"stepId": "send", "resolution": "confirm"},
        )
        assert decided.status_code == 200, decided.text
        await wait_for(api, wf, run_id, lambda r: r["status"] == "completed")
        api_text = (await api.get("/metrics")).text
        worker_text = (await api.get(worker_metrics)).text

    targets = {"API": served(api_text), "worker": served(worker_text)}
    documented = documented_metrics()
    assert len(documented) >= 17
    for name, target, labels in documented:
        found = find(targets[target], name)
        assert found is not None, f"{name} is not served by the {target}"
        if labels is not None:
            assert found == labels, (name, found, labels)
    # Both targets carry the process's own metrics too.
    assert "process_cpu_seconds_total" in targets["API"]
    assert "process_cpu_seconds_total" in targets["worker"]
