"""What every fault test shares: a load that retries like a careful client, and the tally.

The load triggers runs with an `Idempotency-Key` each and repeats a trigger whose answer
it did not get (connection refused or cut, 5xx) until it is accepted. The tally says:
`started` — triggers accepted; `completed` — their runs completed; `lost` — accepted
triggers whose run did not complete; `duplicated` — side effects performed more than
once for one run (the test tool counts them by idempotency key); `reexecuted` — tool
calls beyond the first per node run, which the key made harmless.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from tests.builders import step
from tests.peers.mcp_server import McpStats

TERMINAL = {"completed", "failed", "cancelled"}
# Collected by tests/faults/conftest.py and printed at the end of the session.
REPORTS: list[Tally] = []


@dataclass
class Tally:
    fault: str
    started: int = 0
    completed: int = 0
    lost: int = 0
    duplicated: int = 0
    reexecuted: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        data = asdict(self)
        notes = data.pop("notes")
        return json.dumps(data) + (f"  # {'; '.join(notes)}" if notes else "")


def effect_step(
    seconds: float = 0.3, timeout_seconds: float = 4.0, name: str = "Effect"
) -> dict[str, Any]:
    """One MCP call with a side effect the tool performs once per idempotency key."""
    return step(
        name,
        "peer-http/apply_effect",
        {"target": "{{ input.target }}", "seconds": seconds},
        stepConfig={
            "maxRetries": 20,
            "backoffBaseSeconds": 0.2,
            "backoffMaxSeconds": 1.0,
            "timeoutSeconds": timeout_seconds,
        },
    )


async def create_workflow(api: httpx.AsyncClient, nodes: list[dict[str, Any]]) -> str:
    created = await api.post(
        "/api/v1/workflows", json={"name": f"f-{uuid.uuid4().hex[:8]}", "nodes": nodes}
    )
    assert created.status_code == 201, created.text
    wf: str = created.json()["id"]
    toggled = await api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": True})
    assert toggled.status_code == 200, toggled.text
    return wf


class Load:
    """Triggers `count` runs of one workflow, `concurrency` at a time, retrying each until
    accepted; `url()` says where the API is now (it may move between replicas)."""

    def __init__(self, url: Callable[[], str], workflow_id: str, count: int) -> None:
        self._url = url
        self.workflow_id = workflow_id
        self.count = count
        self.accepted: dict[str, str] = {}  # idempotency key -> run id
        self.retries = 0

    async def run(self, concurrency: int = 8, within: float = 120.0, spacing: float = 0.0) -> None:
        """Trigger everything; with `spacing`, the i-th trigger waits i * spacing first."""
        gate = asyncio.Semaphore(concurrency)
        deadline = time.monotonic() + within

        async def one(index: int) -> None:
            key = f"load-{uuid.uuid4().hex}"
            body = {"initialInput": {"target": f"t{index}"}}
            await asyncio.sleep(index * spacing)
            async with gate:
                while time.monotonic() < deadline:
                    try:
                        async with httpx.AsyncClient(base_url=self._url(), timeout=5) as api:
                            answer = await api.post(
                                f"/api/v1/workflows/{self.workflow_id}/runs",
                                json=body,
                                headers={"Idempotency-Key": key},
                            )
                        if answer.status_code == 202:
                            self.accepted[key] = answer.json()["runId"]
                            return
                    except httpx.TransportError:
                        pass
                    self.retries += 1
                    await asyncio.sleep(0.2)

        await asyncio.gather(*(one(i) for i in range(self.count)))

    async def settle(self, within: float = 120.0) -> dict[str, str]:
        """Wait until every accepted run is terminal; their statuses by run id."""
        deadline = time.monotonic() + within
        statuses: dict[str, str] = {}
        while True:
            open_ids = [r for r in self.accepted.values() if statuses.get(r) not in TERMINAL]
            for run_id in open_ids:
                try:
                    async with httpx.AsyncClient(base_url=self._url(), timeout=5) as api:
                        answer = await api.get(
                            f"/api/v1/workflows/{self.workflow_id}/runs/{run_id}"
                        )
                    if answer.status_code == 200:
                        statuses[run_id] = answer.json()["status"]
                except httpx.TransportError:
                    pass
            if all(statuses.get(r) in TERMINAL for r in self.accepted.values()):
                return statuses
            if time.monotonic() > deadline:
                return statuses
            await asyncio.sleep(0.5)

    async def run_events_logged_twice(self) -> dict[str, list[str]]:
        """Run-level events (start, end) some accepted run logged more than once, by run
        id: empty when every one is in its run's event log once."""
        twice: dict[str, list[str]] = {}
        async with httpx.AsyncClient(base_url=self._url(), timeout=30) as api:
            for run_id in self.accepted.values():
                url = f"/api/v1/workflows/{self.workflow_id}/runs/{run_id}/events"
                async with api.stream("GET", url) as response:
                    types = [
                        line.removeprefix("event:").strip()
                        async for line in response.aiter_lines()
                        if line.startswith("event:")
                    ]
                repeated = sorted({t for t in types if t.startswith("run_") and types.count(t) > 1})
                if repeated:
                    twice[run_id] = repeated
        return twice

    def tally(self, fault: str, statuses: dict[str, str], stats: McpStats | None) -> Tally:
        found = Tally(fault, started=len(self.accepted))
        found.completed = sum(1 for r in self.accepted.values() if statuses.get(r) == "completed")
        found.lost = self.count - found.completed
        if stats is not None:
            for run_id in self.accepted.values():
                keys = [k for k in stats.effect_calls if k.startswith(f"{run_id}.")]
                # Effects per node of the run ("{runId}.{nodeId}"), whatever key they came with.
                per_node: dict[str, int] = {}
                for key in keys:
                    node = key.rsplit(".", 1)[0]
                    per_node[node] = per_node.get(node, 0) + stats.effects[key]
                found.duplicated += sum(max(0, n - 1) for n in per_node.values())
                found.reexecuted += sum(max(0, stats.effect_calls[k] - 1) for k in keys)
        found.notes.append(f"{self.retries} trigger retries")
        return found
