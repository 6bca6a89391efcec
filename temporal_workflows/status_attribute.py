"""The run's status as a search attribute, which operators filter on in the Temporal Web UI.

Every upsert costs the run a history event and the server a visibility update (about
3 ms of CPU per upsert, the dev server's and the worker's, measured by bench.cpu_split).
A run started with `status_shown_per_task` shows only the status it has when it blocks,
once per workflow task: a run that starts and ends in one task upserts `completed`, not
`running` and then `completed`. Nobody could see the skipped value: a task's commands
reach the server together.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import search_attributes


class StatusAttribute:
    def __init__(self, per_task: bool) -> None:
        self._per_task = per_task
        # What the attribute says now. A run from before `per_task` upserted its first
        # status even when it continued a run that already showed it; it replays so.
        started_with = workflow.info().typed_search_attributes.get(search_attributes.RUN_STATUS)
        self._shown = (started_with or "pending") if per_task else "pending"
        self._wanted = self._shown
        self._keeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._per_task:
            self._keeper = asyncio.create_task(self._keep_up())

    def set(self, status: str) -> None:
        self._wanted = status
        if not self._per_task:
            self.settle()

    def settle(self) -> None:
        """Show the status now (before the run returns or continues as new)."""
        if self._wanted != self._shown:
            workflow.upsert_search_attributes(
                [search_attributes.RUN_STATUS.value_set(self._wanted)]
            )
            self._shown = self._wanted

    async def _keep_up(self) -> None:
        # Conditions are checked once everything else in the task has run as far as it can.
        while True:
            await workflow.wait_condition(lambda: self._wanted != self._shown)
            self.settle()
