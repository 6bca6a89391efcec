"""Concurrent writers: many API requests in one process, and an API and a worker on one store."""

from __future__ import annotations

import asyncio
import random

from activities.store.base import Store
from tests.store.builders import at, new_id, node_run, run
from tests.store.conftest import StoreFactory


async def test_concurrent_run_updates_end_with_the_highest_revision(store: Store) -> None:
    record = run(new_id())
    await store.insert_run(record)
    revs = list(range(1, 51))
    random.Random(7).shuffle(revs)
    await asyncio.gather(
        *(store.update_run(record.id, rev, {"final_output": {"rev": rev}}) for rev in revs)
    )
    stored = await store.get_run(record.id)
    assert stored is not None
    assert (stored.rev, stored.final_output) == (50, {"rev": 50})


async def test_concurrent_node_run_upserts_end_with_the_highest_revision(store: Store) -> None:
    record = node_run(new_id())
    revs = list(range(1, 51))
    random.Random(11).shuffle(revs)
    await asyncio.gather(
        *(
            store.upsert_node_run(record.model_copy(update={"rev": rev, "attempt": rev}))
            for rev in revs
        )
    )
    stored = await store.get_node_run(record.id)
    assert stored is not None and (stored.rev, stored.attempt) == (50, 50)


async def test_reads_interleaved_with_writes_all_succeed(store: Store) -> None:
    wf = new_id()

    async def write(i: int) -> None:
        await store.insert_run(run(wf, started_at=at(i)))

    async def read() -> None:
        await store.list_runs(wf)

    await asyncio.gather(*(f(i) for i in range(40) for f in (write, lambda _: read())))
    _, total = await store.list_runs(wf)
    assert total == 40


async def test_two_store_instances_on_one_database_write_concurrently(
    store_factory: StoreFactory,
) -> None:
    api, worker = store_factory(), store_factory()
    await api.connect()
    await worker.connect()
    try:
        wf, run_id = new_id(), new_id()
        await api.insert_run(run(wf, id=run_id))

        async def api_side(i: int) -> None:
            await api.insert_run(run(wf, started_at=at(i)))
            await api.list_runs(wf)

        async def worker_side(i: int) -> None:
            await worker.update_run(run_id, i, {"status": "running"})
            await worker.upsert_node_run(node_run(run_id, started_at=at(i)))
            await worker.append_event(run_id, {"n": i})

        await asyncio.gather(*(side(i) for i in range(1, 41) for side in (api_side, worker_side)))
        _, total = await api.list_runs(wf)
        assert total == 41
        assert len(await api.list_node_runs([run_id])) == 40
        events = await api.list_events(run_id, 0, 100)
        assert [e["id"] for e in events] == sorted(e["id"] for e in events)
        assert len(events) == 40
    finally:
        await api.close()
        await worker.close()


async def test_writes_cancelled_midway_leave_the_store_usable(store: Store) -> None:
    run_id = new_id()
    for ticks in range(12):
        task = asyncio.create_task(store.append_event(run_id, {"ticks": ticks}))
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    event_id = await store.append_event(run_id, {"after": "cancellations"})
    assert (await store.list_events(run_id, event_id - 1, 1))[0]["id"] == event_id
