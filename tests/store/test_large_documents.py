"""A run's input and output, or a node run's, that pass 16 MiB together (every store, see
conftest): MongoDB's documents hold 16 MiB, so there the large fields are kept apart
(activities/store/mongo_apart.py) and read back in place, as SQLite reads them."""

from __future__ import annotations

from typing import Any

import pytest

from activities.store.base import ReadTooLarge, Store
from activities.store.mongo import MongoStore
from temporal_workflows.read_model import FINAL_REV
from tests.store.builders import at, new_id, node_run, run, workflow

MIB = 1024 * 1024


def _big(letter: str, mib: int = 9) -> dict[str, Any]:
    return {"text": letter * (mib * MIB), "n": 2**70}  # and an integer BSON cannot hold


async def _run_with_input(store: Store) -> str:
    wf = workflow()
    await store.create_workflow(wf)
    record = run(wf.id, initial_input=_big("i"))
    await store.insert_run(record)
    return record.id


async def test_a_runs_large_input_and_output_are_kept_and_read_back(store: Store) -> None:
    run_id = await _run_with_input(store)
    assert await store.update_run(run_id, 5, {"status": "completed", "final_output": _big("o")})

    stored = await store.get_run(run_id)
    assert stored is not None
    assert (stored.initial_input, stored.final_output) == (_big("i"), _big("o"))
    [header], _ = await store.list_runs(stored.workflow_definition_id)
    assert (header.initial_input, header.final_output) == (_big("i"), _big("o"))
    # Set again, small: read back so, and the large one's chunks gone (on MongoDB).
    assert await store.update_run(run_id, 6, {"final_output": {"small": True}})
    again = await store.get_run(run_id)
    assert again is not None and again.final_output == {"small": True}
    assert await _chunked(store) in (None, 1)  # the input's 9 MiB: one generation


async def test_a_refused_run_write_keeps_what_was_stored(store: Store) -> None:
    run_id = await _run_with_input(store)
    assert await store.update_run(run_id, 5, {"final_output": _big("o")})

    assert not await store.update_run(run_id, 4, {"final_output": _big("x")})

    stored = await store.get_run(run_id)
    assert stored is not None and stored.final_output == _big("o")
    assert await _chunked(store) in (None, 2)


async def test_a_node_runs_large_input_and_output_are_kept_and_read_back(store: Store) -> None:
    run_id = await _run_with_input(store)
    node_run_id = new_id()
    base = {"id": node_run_id, "workflow_run_id": run_id, "node_id": "a", "node_name": "A"}
    start = {"status": "running", "rev": 10, "attempt": 1, "started_at": at(1)}
    assert await store.merge_node_run({**base, **start, "input_snapshot": _big("n")})
    # Its end does not carry its input, which stays.
    end = {"status": "completed", "rev": 20, "finished_at": at(2)}
    assert await store.merge_node_run({**base, **end, "output_snapshot": _big("p")})

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.status, stored.input_snapshot, stored.output_snapshot) == (
        "completed",
        _big("n"),
        _big("p"),
    )
    [listed] = await store.list_node_runs([run_id])
    [paged], _ = await store.node_run_page(run_id, 0, 10)
    assert listed == paged == stored
    # As stored: the large fields count towards a read's bound.
    with pytest.raises(ReadTooLarge):
        await store.list_node_runs([run_id], max_bytes=10 * MIB)
    assert await _chunked(store) in (None, 3)


async def test_a_node_run_replaced_whole_keeps_its_large_fields(store: Store) -> None:
    run_id = await _run_with_input(store)
    record = node_run(run_id, input_snapshot=_big("n"), output_snapshot=_big("p"), rev=10)
    assert await store.upsert_node_run(record)
    record.output_snapshot = {"small": True}
    record.rev = 20
    assert await store.upsert_node_run(record)
    stale = record.model_copy(update={"rev": 5, "input_snapshot": None})
    assert not await store.upsert_node_run(stale)

    stored = await store.get_node_run(record.id)
    assert stored is not None
    assert (stored.input_snapshot, stored.output_snapshot) == (_big("n"), {"small": True})
    assert await _chunked(store) in (None, 2)


async def test_a_refused_attempt_fills_in_a_large_input_and_keeps_one_stored(
    store: Store,
) -> None:
    run_id = await _run_with_input(store)
    node_run_id = new_id()
    base = {"id": node_run_id, "workflow_run_id": run_id, "node_id": "a", "node_name": "A"}
    cancelled = {"status": "cancelled", "rev": FINAL_REV, "finished_at": at(1)}
    assert await store.merge_node_run({**base, **cancelled})
    start = {"status": "running", "rev": 10, "attempt": 1, "started_at": at(0.5)}

    assert not await store.merge_node_run({**base, **start, "input_snapshot": _big("n")})
    assert not await store.merge_node_run({**base, **start, "input_snapshot": _big("x")})

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.status, stored.attempt, stored.input_snapshot) == ("cancelled", 1, _big("n"))
    assert await _chunked(store) in (None, 2)


async def test_a_deleted_workflow_takes_its_runs_large_fields(store: Store) -> None:
    run_id = await _run_with_input(store)
    record = node_run(run_id, input_snapshot=_big("n"), output_snapshot=_big("p"))
    assert await store.upsert_node_run(record)
    stored = await store.get_run(run_id)
    assert stored is not None

    assert await store.delete_workflow(stored.workflow_definition_id)

    assert await store.get_run(run_id) is None
    assert await _chunked(store) in (None, 0)


async def _chunked(store: Store) -> int | None:
    """How many large values MongoDB keeps apart (generations of chunks); None on SQLite."""
    if not isinstance(store, MongoStore):
        return None
    return len(await store._db().field_chunks.distinct("gen"))
