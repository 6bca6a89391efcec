"""A step's start landing after the workflow ended its node run (every store, see conftest).

A step's attempt writes its start only after 0.2 s (activities/steps.py); a cancel in that
time (the run's, or a failing sibling's) has the workflow write the node run's end first, at
FINAL_REV, so each of the attempt's writes is refused. The node run said `attempt` 0, no
`startedAt`, no `inputSnapshot` — never started — while its tool had been called. A refused
write fills in that start; nothing else of the node run changes and its events are not
logged (docs/lineage-events-schedules.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from activities.store.base import Store
from temporal_workflows.read_model import FINAL_REV, attempt_rev
from tests.store.builders import at, new_id, node_run, run

CONFIG = {"url": "https://tools.example/send", "to": "ada@example.com"}

# The attempt's writes the workflow's end can refuse (activities/steps.py, `_Attempt`):
# its `running` after 0.2 s, its end once it hears the cancel, or, when the run had
# closed before it heard, its error saying Temporal ended it.
ATTEMPT_WRITES = {
    "running": (
        {"status": "running", "rev": attempt_rev(1, "running"), "finished_at": None, "error": None},
        ["node_started"],
    ),
    "cancelled": (
        {"status": "cancelled", "rev": attempt_rev(1, "ended"), "finished_at": at(1.2)},
        ["node_started", "node_cancelled"],
    ),
    "gone": (
        {
            "status": "running",
            "rev": attempt_rev(1, "attempt_failed"),
            "error": "Temporal ended the attempt before it finished (timed out, or the run closed)",
        },
        ["node_started"],
    ),
}


@pytest.mark.parametrize("write", list(ATTEMPT_WRITES))
async def test_an_attempt_refused_after_the_cancel_fills_in_its_start(
    store: Store, write: str
) -> None:
    run_id, node_run_id = await _cancelled_by_the_workflow(store)
    fields, kinds = ATTEMPT_WRITES[write]

    applied = await store.merge_node_run(
        _attempt(run_id, node_run_id, **fields), [_event(run_id, node_run_id, k) for k in kinds]
    )

    assert not applied
    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.attempt, stored.started_at, stored.input_snapshot) == (1, at(0.05), CONFIG)
    # The workflow's end stands: status, error, finish and rev.
    assert (stored.status, stored.error, stored.finished_at, stored.rev) == (
        "cancelled",
        "cancelled",
        at(0.1),
        FINAL_REV,
    )
    # Its end is logged; a start logged now would come after it (and after the run's end).
    assert [e["type"] for e in await store.list_events(run_id, 0, 10)] == ["node_cancelled"]


@pytest.mark.parametrize("start_first", [True, False], ids=["start-first", "end-first"])
async def test_the_node_run_reads_the_same_whichever_lands_first(
    store: Store, start_first: bool
) -> None:
    run_id = await _stored_run(store)
    node_run_id = f"{run_id}.step-1.1"
    fields, kinds = ATTEMPT_WRITES["running"]
    start = (
        _attempt(run_id, node_run_id, **fields),
        [_event(run_id, node_run_id, k) for k in kinds],
    )
    end = (_workflow_end(run_id, node_run_id), [_event(run_id, node_run_id, "node_cancelled")])
    for write, events in [start, end] if start_first else [end, start]:
        await store.merge_node_run(write, events)

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.status, stored.attempt, stored.started_at, stored.input_snapshot) == (
        "cancelled",
        1,
        at(0.05),
        CONFIG,
    )
    # The log shows the start only where it landed first: it only appends.
    logged = [e["type"] for e in await store.list_events(run_id, 0, 10)]
    assert logged == (["node_started", "node_cancelled"] if start_first else ["node_cancelled"])


async def test_a_filled_start_orders_the_node_run_by_it(store: Store) -> None:
    run_id, node_run_id = await _cancelled_by_the_workflow(store)
    later = node_run(run_id, status="completed", attempt=1, started_at=at(0.08), rev=13)
    assert await store.upsert_node_run(later)

    await store.merge_node_run(_attempt(run_id, node_run_id, **ATTEMPT_WRITES["running"][0]))

    assert [n.id for n in await store.list_node_runs([run_id])] == [node_run_id, later.id]
    page, _ = await store.node_run_page(run_id, 0, 10)
    assert [n.id for n in page] == [node_run_id, later.id]


async def test_a_start_already_stored_is_kept(store: Store) -> None:
    # Its `running` landed before the workflow's end: the later refused end changes nothing.
    run_id, node_run_id = await _cancelled_by_the_workflow(store, attempt=1, started_at=at(0.05))
    fields = {**ATTEMPT_WRITES["cancelled"][0], "started_at": at(0.5)}

    assert not await store.merge_node_run(_attempt(run_id, node_run_id, **fields))

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.attempt, stored.started_at, stored.input_snapshot) == (1, at(0.05), None)


async def test_a_gates_opening_stays_the_start_and_the_attempt_is_filled_in(
    store: Store,
) -> None:
    # A step gated before it runs starts at the gate's opening (docs/semantics.md).
    run_id, node_run_id = await _cancelled_by_the_workflow(store, started_at=at(0))

    await store.merge_node_run(_attempt(run_id, node_run_id, **ATTEMPT_WRITES["gone"][0]))

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.attempt, stored.started_at, stored.input_snapshot) == (1, at(0), CONFIG)


async def test_a_refused_write_without_an_attempt_fills_in_nothing(store: Store) -> None:
    run_id, node_run_id = await _cancelled_by_the_workflow(store)
    # The workflow's own writes (a container's, a gate's) carry no attempt.
    fields = _attempt(run_id, node_run_id, rev=5, status="running")
    del fields["attempt"]

    assert not await store.merge_node_run(fields)

    stored = await store.get_node_run(node_run_id)
    assert stored is not None
    assert (stored.attempt, stored.started_at) == (0, None)


async def test_an_input_beyond_sixty_four_bits_is_filled_in_whole(store: Store) -> None:
    run_id, node_run_id = await _cancelled_by_the_workflow(store)
    fields = {**ATTEMPT_WRITES["cancelled"][0], "input_snapshot": {"id": 2**70}}

    await store.merge_node_run(_attempt(run_id, node_run_id, **fields))

    stored = await store.get_node_run(node_run_id)
    assert stored is not None and stored.input_snapshot == {"id": 2**70}


async def _cancelled_by_the_workflow(store: Store, **stored: Any) -> tuple[str, str]:
    """A run whose step's node run the workflow ended `cancelled` at FINAL_REV, as
    `Recorder.cancelled` writes it (no attempt, start or input); (run id, node run id)."""
    run_id = await _stored_run(store)
    node_run_id = f"{run_id}.step-1.1"
    fields = {**_workflow_end(run_id, node_run_id), **stored}
    assert await store.merge_node_run(fields, [_event(run_id, node_run_id, "node_cancelled")])
    return run_id, node_run_id


async def _stored_run(store: Store) -> str:
    """A run in the store (node runs are merged only into a run it has); its id."""
    record = run(new_id())
    await store.insert_run(record)
    return record.id


def _workflow_end(run_id: str, node_run_id: str) -> dict[str, Any]:
    """The workflow's `cancelled` write of a step's node run (`Recorder.cancelled`)."""
    return {
        "id": node_run_id,
        "workflow_run_id": run_id,
        "node_id": "step-1",
        "node_name": "Validate",
        "node_type": "step",
        "status": "cancelled",
        "rev": FINAL_REV,
        "finished_at": at(0.1),
        "error": "cancelled",
    }


def _attempt(run_id: str, node_run_id: str, **fields: Any) -> dict[str, Any]:
    """A write of the step's first attempt, as `_Attempt` makes it."""
    return {
        "id": node_run_id,
        "workflow_run_id": run_id,
        "node_id": "step-1",
        "node_name": "Validate",
        "node_type": "step",
        "attempt": 1,
        "started_at": at(0.05),
        "input_snapshot": CONFIG,
        **fields,
    }


def _event(run_id: str, node_run_id: str, kind: str) -> dict[str, Any]:
    return {"type": kind, "runId": run_id, "nodeRunId": node_run_id, "nodeId": "step-1"}
