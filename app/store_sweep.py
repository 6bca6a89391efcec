"""The reconciler's look from the store's side: the store's open runs asked about in
Temporal, at the worker's start and then every few minutes.

A store restored from a copy older than Temporal's state (a backup) shows runs open that
have ended since: their workflows recorded their ends in the store that was replaced, so
no search attribute says them open. Asked by id (a visibility query per `BATCH` runs), each
closed one is handed to the reconciler's correction; one Temporal no longer has at all
(deleted by an operator, past the namespace's retention, or its state replaced) is
closed as lost. At the first pass it also names the runs open in Temporal on this task
queue that the store lacks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.store.base import Store
from activities.store.open_runs import open_runs
from activities.store.records import RunHeader
from temporal_workflows.contracts import WORKFLOW_TYPE

log = logging.getLogger("trellis.reconciler")
EVERY = timedelta(minutes=5)
# Runs asked about in one visibility query (`WorkflowId IN (…)`; 100 took 0.02 s).
BATCH = 100
# Executions whose run the correction never takes: still going, or gone on as a new one.
NOT_ENDS = frozenset({WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW})


class StoreSweep:
    def __init__(
        self,
        client: Client,
        store: Store,
        task_queue: str,
        *,
        correct: Callable[[WorkflowExecution], Awaitable[bool]],
        close_lost: Callable[[str], Awaitable[bool]],
        every: timedelta = EVERY,
    ) -> None:
        self._client = client
        self._store = store
        self._task_queue = task_queue
        self._correct = correct
        self._close_lost = close_lost
        self._every = every.total_seconds()
        # Monotonic time of the last sweep (None: at the first pass).
        self._swept_at: float | None = None

    async def run_if_due(self) -> list[str]:
        """The runs it closed; nothing when it swept less than `every` ago."""
        now = time.monotonic()
        if self._swept_at is not None and now - self._swept_at < self._every:
            return []
        runs = await open_runs(self._store)
        if self._swept_at is None:
            await self._tell_of_runs_the_store_lacks({r.id for r in runs})
        closed: list[str] = []
        for start in range(0, len(runs), BATCH):
            closed += await self._sweep(runs[start : start + BATCH])
        self._swept_at = now
        return closed

    async def _sweep(self, runs: list[RunHeader]) -> list[str]:
        named = ", ".join(f"'{r.id}'" for r in runs)
        closed: list[str] = []
        known: set[str] = set()
        async for execution in self._client.list_workflows(f"WorkflowId IN ({named})"):
            known.add(execution.id)
            if execution.status not in NOT_ENDS and await self._correct(execution):
                closed.append(execution.id)
        for run in runs:
            # A pending run may not have started yet: the never-started sweep starts it.
            if run.id in known or run.status == "pending":
                continue
            if await self._gone(run.id) and await self._close_lost(run.id):
                closed.append(run.id)
        return closed

    async def _gone(self, run_id: str) -> bool:
        """Whether Temporal has no workflow of this id (visibility can lag behind a start)."""
        try:
            await self._client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return True
            raise
        return False

    async def _tell_of_runs_the_store_lacks(self, open_in_store: set[str]) -> None:
        """Runs open in Temporal on this task queue that the store does not have (a store
        deleted, replaced, or restored from an older copy): no API shows or steers them,
        and they go on calling their steps."""
        query = (
            f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
            f" AND TaskQueue = '{self._task_queue}'"
        )
        missing = [
            execution.id
            async for execution in self._client.list_workflows(query)
            if execution.id not in open_in_store and await self._store.get_run(execution.id) is None
        ]
        if missing:
            log.warning(
                "%d run(s) open in Temporal on task queue %s are not in the store (was it"
                " deleted, replaced or restored from an older copy?): no API shows or steers"
                " them; end them in the Web UI or with `temporal workflow terminate`: %s",
                len(missing),
                self._task_queue,
                ", ".join(missing[:5]) + (", …" if len(missing) > 5 else ""),
            )
