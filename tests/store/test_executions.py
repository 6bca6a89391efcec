"""Contract: the latest Temporal execution speaks for a run and its node runs
(activities/store/executions.py), on every store."""

from __future__ import annotations

from activities.store.base import Store
from temporal_workflows.read_model import (
    CANCELLED_UNSTARTED_REV,
    FINAL_REV,
    OPEN_REV,
    RECONCILED_REV,
)
from tests.store.builders import at, new_id, node_run, run

TERMINATED = {
    "status": "failed",
    "error_summary": "Terminated in Temporal: x",
    "finished_at": at(9),
    "pending_requirements": [],
}


async def _run_of(store: Store, execution: str) -> str:
    record = run(new_id())
    await store.insert_run(record)
    waiting = {"status": "awaiting_approval", "execution": execution}
    assert await store.update_run(record.id, 5, waiting, newer_only=True)
    return record.id


class TestRunExecutions:
    async def test_a_newer_execution_takes_over_a_corrected_run_whatever_its_rev(
        self, store: Store
    ) -> None:
        run_id = await _run_of(store, "e1")
        closed = {**TERMINATED, "execution": "e1"}
        assert await store.update_run(run_id, RECONCILED_REV, closed, newer_only=True)

        started = {"status": "running", "execution": "e2"}
        event = {"type": "run_started", "runId": run_id}
        assert await store.update_run(run_id, 1, started, event, newer_only=True)

        stored = await store.get_run(run_id)
        assert stored is not None
        assert (stored.status, stored.rev, stored.execution) == ("running", 1, "e2")
        assert (stored.error_summary, stored.finished_at) == (None, None)
        assert stored.earlier_executions == ["e1"]
        kinds = [e["type"] for e in await store.list_events(run_id, 0, 10)]
        assert kinds == ["run_started"]
        # Its own writes go by revs again.
        assert not await store.update_run(run_id, 1, started, newer_only=True)
        assert await store.update_run(run_id, 2, {"status": "paused", "execution": "e2"})

    async def test_an_older_executions_late_write_is_refused_whatever_its_rev(
        self, store: Store
    ) -> None:
        # The reconciler closing the old execution, after the new one took over, too.
        run_id = await _run_of(store, "e1")
        assert await store.update_run(run_id, 1, {"status": "running", "execution": "e2"})
        for rev in (3, FINAL_REV):
            late = {"status": "completed", "end_order": 40, "execution": "e1"}
            assert not await store.update_run(run_id, rev, late, newer_only=True, ending=True)
        closed = {**TERMINATED, "execution": "e1"}
        assert not await store.update_run(run_id, RECONCILED_REV, closed, newer_only=True)
        stored = await store.get_run(run_id)
        assert stored is not None and (stored.status, stored.rev) == ("running", 1)

    async def test_a_completed_runs_end_goes_with_the_execution_that_wrote_it(
        self, store: Store
    ) -> None:
        run_id = await _run_of(store, "e1")
        done = {"status": "completed", "final_output": {"n": 1}, "end_order": 30}
        assert await store.update_run(
            run_id, 6, done | {"finished_at": at(3), "execution": "e1"}, ending=True
        )
        assert await store.update_run(run_id, 2, {"status": "running", "execution": "e2"})
        stored = await store.get_run(run_id)
        assert stored is not None
        assert (stored.final_output, stored.end_order, stored.finished_at) == (None, None, None)
        # The new execution's end lands though an earlier task of the old one wrote its own.
        again = {"status": "completed", "end_order": 12, "execution": "e2"}
        assert await store.update_run(run_id, 3, again, newer_only=True, ending=True)

    async def test_writes_without_an_execution_go_by_revs(self, store: Store) -> None:
        # A cancel before the start (no execution yet) stays over the workflow's writes.
        record = run(new_id())
        await store.insert_run(record)
        cancelled = {"status": "cancelled"}
        assert await store.update_run(record.id, CANCELLED_UNSTARTED_REV, cancelled)
        assert not await store.update_run(record.id, 1, {"status": "running", "execution": "e1"})
        # A write naming none (the API's) changes no execution.
        run_id = await _run_of(store, "e1")
        assert await store.update_run(run_id, 6, {"status": "paused"})
        stored = await store.get_run(run_id)
        assert stored is not None and stored.execution == "e1"

    async def test_a_run_remembers_the_last_few_executions_it_went_on_from(
        self, store: Store
    ) -> None:
        run_id = await _run_of(store, "e0")
        for n in range(1, 7):
            assert await store.update_run(run_id, 1, {"status": "running", "execution": f"e{n}"})
        stored = await store.get_run(run_id)
        assert stored is not None
        assert stored.earlier_executions == ["e2", "e3", "e4", "e5"]


class TestNodeRunExecutions:
    async def test_a_newer_execution_takes_a_node_run_over_and_an_older_one_is_refused(
        self, store: Store
    ) -> None:
        run_id = await _run_of(store, "e1")
        record = node_run(run_id, started_at=at(1))
        ended = {
            "status": "completed",
            "rev": FINAL_REV,
            "output_snapshot": {"n": 1},
            "finished_at": at(2),
            "execution": "e1",
        }
        assert await store.merge_node_run(record.to_document() | ended)

        waiting = {"id": record.id, "status": "awaiting_approval", "rev": OPEN_REV}
        assert await store.merge_node_run(waiting | {"execution": "e2"}, [{"type": "x"}])
        taken = await store.get_node_run(record.id)
        assert taken is not None
        assert (taken.status, taken.rev, taken.execution) == ("awaiting_approval", OPEN_REV, "e2")
        assert (taken.output_snapshot, taken.finished_at) == (None, None)
        assert (taken.node_name, taken.started_at) == (record.node_name, at(1))
        assert taken.earlier_executions == ["e1"]

        # A late attempt of the old execution, at any rev.
        for rev in (13, FINAL_REV):
            assert not await store.merge_node_run(ended | {"id": record.id, "rev": rev})
        kept = await store.get_node_run(record.id)
        assert kept is not None and kept.status == "awaiting_approval"
        # The new execution's own go by revs.
        assert not await store.merge_node_run(waiting | {"rev": 0, "execution": "e2"})
