"""The live stream's reader over a long event log, on both stores (app/services/event_stream.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.store.base import Store
from app.auth.caller import DEV_CALLER
from app.auth.stream_access import StreamAccess
from app.services import event_stream
from app.services.event_stream import PAGE, RunEventFollower
from tests.store.builders import new_id, run

EVENTS = 2 * PAGE + 200


class CountingReads:
    """The store, counting the follower's reads of the event log."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def list_events(self, run_id: str, after_id: int, limit: int) -> list[dict[str, Any]]:
        self.reads += 1
        return await self._store.list_events(run_id, after_id, limit)


@pytest.mark.parametrize("in_order", [True, False], ids=["ids in order", "ids may land late"])
async def test_a_long_log_is_read_page_after_page_without_reading_a_page_again(
    store: Store, in_order: bool
) -> None:
    # A full page was read again from the settle watermark until its events were 2 s old:
    # a busy loop that held the API (probes, other streams, shutdown) 2 s per 500 events.
    record = run(new_id(), status="completed")
    await store.insert_run(record)
    for i in range(EVENTS - 1):
        await store.append_event(record.id, {"type": "node_started", "n": i})
    await store.append_event(record.id, {"type": "run_completed", "n": EVENTS - 1})
    counting = CountingReads(store)
    counting.ids_visible_in_order = in_order
    access = StreamAccess(
        store, DEV_CALLER, record.workflow_definition_id, record.id, recheck_seconds=60
    )
    follower = RunEventFollower(counting, record.id, access)  # type: ignore[arg-type]
    seen = [event["n"] async for event in follower.events()]
    assert seen == list(range(EVENTS))
    assert counting.reads == EVENTS // PAGE + 1, counting.reads


class _Clock:
    """Monotonic time that moves only when the store says so."""

    now = 0.0

    def monotonic(self) -> float:
        return self.now


class _LateIdStore:
    """A scripted event log whose id 300 lands late, as MongoDB's can (its ids come from a
    counter before the insert), while a slow client takes a second per page."""

    ids_visible_in_order = False

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.visible = {i for i in range(1, 3 * PAGE + 50) if i != 300}

    async def list_events(self, run_id: str, after_id: int, limit: int) -> list[dict[str, Any]]:
        ids = sorted(i for i in self.visible if i > after_id)[:limit]
        self.clock.now += 1.0
        self.visible.add(300)  # lands just after the first page was read
        return [{"id": i, "type": "node_started"} for i in ids]

    async def get_run(self, run_id: str) -> Any:
        return run("wf", status="completed", updated_at=datetime.now(UTC) - timedelta(minutes=1))


async def test_an_id_landing_late_while_pages_are_read_on_is_still_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Paging on from a full page's last id while the watermark settled past ids seen 2 s
    # before skipped the late id for good (found in review; the paging came first).
    clock = _Clock()
    monkeypatch.setattr(event_stream, "time", clock)
    store = _LateIdStore(clock)
    access = StreamAccess(store, DEV_CALLER, "wf", "run-x", recheck_seconds=60)  # type: ignore[arg-type]
    follower = RunEventFollower(store, "run-x", access, poll_seconds=0)  # type: ignore[arg-type]
    seen = [event["id"] async for event in follower.events()]
    assert sorted(seen) == sorted(store.visible)
    assert len(seen) == len(set(seen))
