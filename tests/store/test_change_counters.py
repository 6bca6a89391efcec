"""The Store contract for change counters: every write to a run or its node runs counts.

A read reuses its answer while the counter stands (app/read_cache.py), so a write that
did not count would serve a stale answer. MongoDB keeps none (None: read afresh).
"""

from __future__ import annotations

import pytest

from activities.store.base import Store
from tests.store.builders import new_id, node_run, run, workflow


async def _counted(store: Store) -> tuple[str, str]:
    """A workflow with one run; skips where the store keeps no counters."""
    record = workflow()
    await store.create_workflow(record)
    if await store.workflow_run_changes(record.id) is None:
        assert await store.run_changes(new_id()) is None
        pytest.skip("this store keeps no change counters: its reads are answered afresh")
    stored = await store.insert_run(run(record.id))
    return record.id, stored.id


async def test_a_runs_counter_grows_with_every_write_to_it_or_its_node_runs(
    store: Store,
) -> None:
    _, run_id = await _counted(store)
    seen = [await store.run_changes(run_id)]
    await store.update_run(run_id, 1, {"status": "running"}, {"type": "run_started"})
    seen.append(await store.run_changes(run_id))
    record = node_run(run_id, rev=1)
    await store.upsert_node_run(record)
    seen.append(await store.run_changes(run_id))
    await store.merge_node_run({"id": record.id, "rev": 2, "status": "completed"})
    seen.append(await store.run_changes(run_id))
    assert all(isinstance(n, int) for n in seen)
    assert seen == sorted(set(seen)), f"every write counted once or more: {seen}"


async def test_a_refused_write_changes_no_counter(store: Store) -> None:
    workflow_id, run_id = await _counted(store)
    await store.update_run(run_id, 5, {"status": "running"})
    before = (await store.run_changes(run_id), await store.workflow_run_changes(workflow_id))
    assert await store.update_run(run_id, 4, {"status": "failed"}) is False  # stale rev
    assert (await store.run_changes(run_id), await store.workflow_run_changes(workflow_id)) == (
        before
    )


async def test_a_workflows_counter_counts_all_its_runs_and_only_them(store: Store) -> None:
    workflow_id, run_id = await _counted(store)
    _, other_run = await _counted(store)
    before = await store.workflow_run_changes(workflow_id)
    run_before = await store.run_changes(run_id)
    assert before is not None and run_before is not None
    # A second run of the workflow, and a node run of it: the workflow's count moves, the
    # first run's does not.
    second = await store.insert_run(run(workflow_id))
    after_insert = await store.workflow_run_changes(workflow_id)
    assert after_insert is not None and after_insert > before
    await store.upsert_node_run(node_run(second.id, rev=1))
    after_node = await store.workflow_run_changes(workflow_id)
    assert after_node is not None and after_node > after_insert
    assert await store.run_changes(run_id) == run_before
    # Another workflow's writes leave it alone.
    await store.update_run(other_run, 1, {"status": "running"})
    await store.upsert_node_run(node_run(other_run, rev=1))
    assert await store.workflow_run_changes(workflow_id) == after_node


async def test_deleting_a_workflow_moves_its_runs_counters_on(store: Store) -> None:
    workflow_id, run_id = await _counted(store)
    await store.upsert_node_run(node_run(run_id, rev=1))
    before = (await store.run_changes(run_id), await store.workflow_run_changes(workflow_id))
    assert await store.delete_workflow(workflow_id)
    after = (await store.run_changes(run_id), await store.workflow_run_changes(workflow_id))
    moved = [a is not None and b is not None and a > b for a, b in zip(after, before, strict=True)]
    assert moved == [True, True]


async def test_unknown_ids_count_zero(store: Store) -> None:
    await _counted(store)
    assert await store.run_changes(new_id()) == 0
    assert await store.workflow_run_changes(new_id()) == 0
