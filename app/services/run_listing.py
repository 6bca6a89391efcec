"""Pages of runs (a workflow's, or a run's children), each with its node runs, or with
`counted` their counts by status (a run of thousands of node runs made a page of runs
tens of megabytes)."""

from __future__ import annotations

from dataclasses import dataclass

from activities.store.base import Store
from activities.store.records import NodeRunRecord, RunHeader, RunRecord
from app.schemas.run import CountedRunPage, CountedRunSummary, RunPage, RunSummary
from app.schemas.workflow import Pagination
from temporal_workflows.read_model import RunStatus


@dataclass
class RunListing:
    store: Store
    # The most node runs (as stored) a page carries, in bytes (ReadTooLarge past it).
    max_bytes: int | None = None

    async def of_workflow(
        self,
        workflow_id: str,
        status: RunStatus | None,
        page: int,
        per_page: int,
        counted: bool = False,
        schedule_id: str | None = None,
    ) -> RunPage | CountedRunPage:
        """Runs of the workflow, newest first, optionally in one status, or started by one
        schedule."""
        runs, total = await self.store.list_runs(
            workflow_id, status=status, schedule_id=schedule_id, page=page, per_page=per_page
        )
        return await self._answer(runs, total, page, per_page, counted)

    async def children(
        self, run: RunRecord, page: int, per_page: int, counted: bool = False
    ) -> RunPage | CountedRunPage:
        """Runs spawned from this run (retry, node rerun, replay), newest first."""
        runs, total = await self.store.list_runs(
            run.workflow_definition_id, parent_run_id=run.id, page=page, per_page=per_page
        )
        return await self._answer(runs, total, page, per_page, counted)

    async def _answer(
        self, runs: list[RunHeader], total: int, page: int, per_page: int, counted: bool
    ) -> RunPage | CountedRunPage:
        if not counted:
            return await self._page(runs, total, page, per_page)
        counts = await self.store.node_run_counts_of([r.id for r in runs])
        return CountedRunPage(
            runs=[CountedRunSummary.counted(r, counts[r.id]) for r in runs],
            pagination=Pagination.of(total, page, per_page),
        )

    async def _page(self, runs: list[RunHeader], total: int, page: int, per_page: int) -> RunPage:
        # One query for the node runs of the whole page.
        by_run: dict[str, list[NodeRunRecord]] = {r.id: [] for r in runs}
        for node_run in await self.store.list_node_runs(list(by_run), self.max_bytes):
            by_run[node_run.workflow_run_id].append(node_run)
        return RunPage(
            runs=[RunSummary.from_record(r, by_run[r.id]) for r in runs],
            pagination=Pagination.of(total, page, per_page),
        )
