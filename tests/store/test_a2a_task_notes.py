"""The tasks A2A steps note (`record_a2a_task`), on SQLite and on MongoDB (the named fake
here): a sweep claims those whose step is gone (not followed since its bound), each once of
sweeps racing; a step settling its own goes before a sweep or, a sweep holding it, leaves
it to that sweep."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from activities.store.base import Store
from activities.store.records import A2ATaskRef
from tests.store.builders import at, new_id, node_run, run, workflow
from tests.store.conftest import StoreFactory

LEASE = timedelta(seconds=50)


async def _run(store: Store, status: str = "running") -> str:
    wf = workflow()
    await store.create_workflow(wf)
    record = run(wf.id, status=status)
    await store.insert_run(record)
    return record.id


async def _noted(store: Store, run_id: str, node_status: str | None = "running") -> A2ATaskRef:
    task = A2ATaskRef(run_id, new_id(), "slow-agent", new_id())
    if node_status is not None:
        await store.upsert_node_run(node_run(run_id, id=task.node_run_id, status=node_status))
    await store.record_a2a_task(task, at(0))
    return task


async def _claimed(
    store: Store, seconds: float = 10, followed_before: float | None = None
) -> set[A2ATaskRef]:
    """What a sweep at `seconds` claims, taking notes not followed after `followed_before`
    (by default: `seconds`, any note)."""
    before = at(seconds if followed_before is None else followed_before)
    claimed = await store.claim_abandoned_a2a_tasks(at(seconds), LEASE, 100, followed_before=before)
    return {t.ref for t in claimed}


async def test_a_sweep_claims_the_tasks_whose_run_or_node_run_ended_and_no_other(
    store: Store,
) -> None:
    open_run = await _run(store)
    following = await _noted(store, open_run)  # its step follows it
    unwritten = await _noted(store, open_run, node_status=None)  # its node run not yet written
    waiting = await _noted(store, await _run(store, "paused"))
    cancelled_run = await _noted(store, await _run(store, "cancelled"))
    failed_node = await _noted(store, open_run, node_status="failed")
    cancelled_node = await _noted(store, open_run, node_status="cancelled")
    deleted_run = A2ATaskRef(new_id(), new_id(), "slow-agent", new_id())
    await store.record_a2a_task(deleted_run, at(0))
    await store.record_a2a_task(cancelled_run, at(5))  # noted again: followed at 5

    assert await _claimed(store) == {cancelled_run, failed_node, cancelled_node, deleted_run}
    # Held: no second claim until the lease is out.
    assert await _claimed(store, 20) == set()
    # Past the lease the ended ones are claimed again (their sweep died); never the others.
    assert await _claimed(store, 100) == {cancelled_run, failed_node, cancelled_node, deleted_run}
    assert {following, unwritten, waiting}.isdisjoint(await _claimed(store, 200))


async def test_a_sweep_leaves_a_task_its_step_said_it_follows_since_the_bound(
    store: Store,
) -> None:
    ended = await _run(store, "cancelled")
    followed, silent, noted_again = [await _noted(store, ended) for _ in range(3)]
    await store.follow_a2a_task(followed, at(8))
    await store.record_a2a_task(noted_again, at(7))  # a later attempt follows it again

    assert await _claimed(store, 10, followed_before=5) == {silent}
    assert await _claimed(store, 100, followed_before=7) == {silent, noted_again}
    assert await _claimed(store, 200, followed_before=8) == {silent, noted_again, followed}


async def test_a_follow_never_moves_a_note_back_nor_brings_a_settled_one_back(
    store: Store,
) -> None:
    ended = await _run(store, "cancelled")
    task, settled = await _noted(store, ended), await _noted(store, ended)
    await store.follow_a2a_task(task, at(8))
    await store.follow_a2a_task(task, at(6))  # a write that was slower to land
    await store.record_a2a_task(task, at(3))
    assert await store.settle_a2a_task(settled, at(4))
    await store.follow_a2a_task(settled, at(5))  # the step's last follow, landing late

    assert await _claimed(store, 10, followed_before=7) == set()
    assert await _claimed(store, 10, followed_before=8) == {task}


async def test_sweeps_racing_claim_each_task_once(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(3)]
    for opened in stores:
        await opened.connect()
    try:
        ended = await _run(stores[0], "cancelled")
        tasks = {await _noted(stores[0], ended) for _ in range(30)}
        claims = await asyncio.gather(
            *(
                s.claim_abandoned_a2a_tasks(at(10), LEASE, 100, followed_before=at(10))
                for s in stores
            )
        )
        refs = [t.ref for claim in claims for t in claim]
        assert sorted(refs, key=str) == sorted(tasks, key=str)  # each once
    finally:
        for opened in stores:
            await opened.close()


async def test_a_step_settling_its_task_forgets_it_unless_a_sweep_holds_it(store: Store) -> None:
    open_run = await _run(store)
    ended = await _noted(store, open_run)
    assert await store.settle_a2a_task(ended, at(1))
    assert await store.settle_a2a_task(ended, at(2))  # never noted (or gone): nothing held
    held = await _noted(store, open_run, node_status="cancelled")
    assert await _claimed(store) == {held}

    # The sweep holds it: the step leaves its cancel to the sweep.
    assert not await store.settle_a2a_task(held, at(11))
    # A claim past its lease (the sweep's worker died) holds nothing.
    assert await store.settle_a2a_task(held, at(10) + LEASE)
    assert await _claimed(store, 1000) == set()


async def test_an_agent_not_reached_is_tried_again_knowing_since_when(store: Store) -> None:
    task = await _noted(store, await _run(store, "cancelled"))
    [claimed] = await store.claim_abandoned_a2a_tasks(at(10), LEASE, 10, followed_before=at(10))
    assert claimed.first_failed_at is None

    await store.release_a2a_task(task, at(11))
    [again] = await store.claim_abandoned_a2a_tasks(at(12), LEASE, 10, followed_before=at(12))
    await store.release_a2a_task(task, at(13))
    [third] = await store.claim_abandoned_a2a_tasks(at(14), LEASE, 10, followed_before=at(14))
    assert (again.ref, again.first_failed_at, third.first_failed_at) == (task, at(11), at(11))

    await store.forget_a2a_task(task)  # cancelled, or given up: it goes, claimed or not
    assert (
        await store.claim_abandoned_a2a_tasks(at(1000), LEASE, 10, followed_before=at(1000)) == []
    )


async def test_a_sweep_claims_at_most_its_batch_oldest_first(store: Store) -> None:
    ended = await _run(store, "cancelled")
    tasks = []
    for second in range(5):
        task = A2ATaskRef(ended, new_id(), "slow-agent", new_id())
        await store.record_a2a_task(task, at(second))
        tasks.append(task)
    first = await store.claim_abandoned_a2a_tasks(at(10), LEASE, 3, followed_before=at(10))
    rest = await store.claim_abandoned_a2a_tasks(at(10), LEASE, 3, followed_before=at(10))
    assert [t.ref for t in first] == tasks[:3] and [t.ref for t in rest] == tasks[3:]
