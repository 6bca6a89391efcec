"""What the run is doing now: paused or not, which nodes run, its Web UI details line."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outbox import Outbox


class Pause:
    """A paused run starts no new node; in-flight steps finish."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.paused = False
        self.paused_at: str | None = None

    def set(self, paused: bool, at: str | None) -> None:
        self.paused = paused
        self.paused_at = at

    async def hold(self) -> None:
        """Return at once unless paused; else once resumed."""
        if self.paused:
            self._outbox.request_flush()
            await workflow.wait_condition(lambda: not self.paused)


class Activity:
    """The nodes running now, shown with the open gates as the workflow's current details."""

    def __init__(self, gates: OpenGates, pause: Pause) -> None:
        self._gates = gates
        self._pause = pause
        # node_run_id -> node name, in start order (dicts keep insertion order).
        self._running: dict[str, str] = {}

    def enter(self, node_run_id: str, name: str) -> None:
        self._running[node_run_id] = name
        self.show()

    def leave(self, node_run_id: str) -> None:
        self._running.pop(node_run_id, None)
        self.show()

    def live_status(self) -> str:
        if self._pause.paused:
            return "paused"
        return "awaiting_approval" if self._gates.open else "running"

    def show(self) -> None:
        """The details line the Temporal Web UI shows for this run."""
        if not workflow.in_workflow():
            return  # a branch's `finally` run while an evicted run's tasks are torn down
        names = list(dict.fromkeys(self._running.values()))
        waiting = self._gates.waiting_names()
        parts = []
        if names:
            parts.append(f"Running: {', '.join(names)}")
        if waiting:
            parts.append(f"Waiting for approval at: {', '.join(waiting)}")
        if self._pause.paused:
            parts.append("Paused")
        workflow.set_current_details("; ".join(parts))
