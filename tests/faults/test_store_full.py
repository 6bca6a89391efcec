"""A full disk is a store that cannot take writes for now: the API answers 503 "retry
shortly", and a step's end write waits for space instead of failing a step whose work is
done. The disk fills for real: SQLite's `max_page_count` on the store's own connection
makes it answer as a full disk does ("database or disk is full", SQLITE_FULL)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverStoreContext

from activities.payloads import StorePayloads
from activities.store.factory import open_store
from activities.store.sqlite import SqliteStore
from tests.builders import delay, step
from tests.support.platform import Platform
from tests.support.polling import eventually

# An output that needs new pages, kept under the payload offload threshold (256 KiB), so
# only the step's own end write meets the full disk.
BLOB = "x" * 200_000


async def fill(store: SqliteStore, full: bool) -> None:
    db = store._db
    assert db is not None
    if not full:
        await db.execute("PRAGMA max_page_count = 1073741823")
        return
    async with db.execute("PRAGMA page_count") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    await db.execute(f"PRAGMA max_page_count = {row[0]}")


async def test_a_full_disk_is_503_and_a_steps_end_write_waits_for_space(
    platform: Platform,
) -> None:
    store = platform.store
    assert isinstance(store, SqliteStore)
    fetch = step(
        "fetch",
        "builtin:http",
        {"url": f"{platform.peer_url}/echo/full", "method": "POST", "json": {"blob": BLOB}},
        id="fetch",
    )
    wf = await platform.create({"nodes": [delay("wait", 1.0), fetch]})
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id, {"running"})
    await fill(store, full=True)
    try:
        # It was 500 "Database operation failed", as for a bug.
        refused = await platform.api.post(
            "/api/v1/workflows",
            json={"name": "too big to fit", "nodes": [step("big", "builtin:echo", {"blob": BLOB})]},
        )
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["message"] == "Database unavailable; retry shortly"
        # The step called its peer; its output cannot be written yet (it failed the run).
        await eventually(lambda: platform.peer.calls["full"] >= 1)
        await asyncio.sleep(1.5)
        shown = (await platform.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
        assert shown["status"] == "running", shown
    finally:
        await fill(store, full=False)
    run = await platform.wait(wf, run_id)
    assert run["status"] == "completed", run
    fetched = next(n for n in run["nodeRuns"] if n["nodeId"] == "fetch")
    assert fetched["outputSnapshot"]["body"]["body"]["blob"] == BLOB
    assert platform.peer.calls["full"] == 1
    listed = (await platform.api.get("/api/v1/workflows")).json()
    assert "too big to fit" not in str(listed)


async def test_a_payload_written_while_the_disk_is_full_waits_for_space(tmp_path: Path) -> None:
    # It raised at once: an activity whose large result could not be offloaded was failed
    # and run again (its call made twice), a workflow task failed.
    store = open_store(f"sqlite:///{tmp_path / 'trellis.db'}")
    await store.connect()
    assert isinstance(store, SqliteStore)
    try:
        payload = Payload(data=b"x" * 300_000)
        await fill(store, full=True)
        writing = asyncio.create_task(
            StorePayloads(store).store(StorageDriverStoreContext(), [payload])
        )
        await asyncio.sleep(0.6)
        assert not writing.done()
        await fill(store, full=False)
        [claim] = await asyncio.wait_for(writing, 5)
        assert await store.get_payload(claim.claim_data["key"]) == payload.SerializeToString()
    finally:
        await store.close()
