"""A schedule with a large input: each firing's own copy goes once the firing is surely over
(the reconciler's sweep, its bound made nil here), the schedule's own argument stays while
the schedule does and goes after its delete, and every run it started keeps its own."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sqlite3
from datetime import timedelta
from typing import Any

from google.protobuf.json_format import MessageToDict
from prometheus_client import CollectorRegistry

from activities.metrics import RunMetrics
from activities.store.base import PayloadHolder
from activities.store.sqlite import SqliteStore
from app.firing_payloads import FiringPayloads
from app.reconciler import Reconciler
from tests.builders import delay
from tests.engine.test_payload_retention import claims, present
from tests.schedules.test_schedules import ECHO, runs_of, url
from tests.store.test_payload_refs import put_as_older_worker
from tests.support.platform import Platform
from tests.support.polling import eventually

LARGE = {"blob": "x" * 300_000}


def sweep(p: Platform) -> FiringPayloads:
    """The reconciler's sweep, taking every firing's references made before now."""
    return FiringPayloads(p.client, p.store, RunMetrics(CollectorRegistry()), keep_for=timedelta(0))


async def settled_runs(p: Platform, wf: str) -> dict[str, str]:
    """Each run the schedule started, ended, by the firing (trigger workflow) that did, closed."""
    started: dict[str, str] = {}
    for listed in await runs_of(p, wf):
        assert (await p.wait(wf, listed["id"]))["status"] == "completed"
        record = await p.store.get_run(listed["id"])
        assert record is not None and record.trigger_workflow_id
        await p.client.get_workflow_handle(record.trigger_workflow_id).result()
        started[listed["id"]] = record.trigger_workflow_id
    return started


async def schedules_own(p: Platform, firing: str) -> str:
    """The key of the schedule's argument: the claim its firing's workflow started with."""
    history = await p.client.get_workflow_handle(firing).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    (key,) = claims_in(started.input.payloads)
    return key


def claims_in(payloads: Any) -> set[str]:
    found: set[str] = set()
    for payload in payloads:
        as_dict = MessageToDict(payload)
        if "externalPayloads" in as_dict:
            found.add(json.loads(base64.b64decode(as_dict["data"]))["claimData"]["key"])
    return found


def firing_refs_left(p: Platform) -> list[tuple[str, str]]:
    """On SQLite: every payload with no reference but a firing's (none should be left)."""
    if not isinstance(p.store, SqliteStore):
        return []
    with sqlite3.connect(p.store.path) as db:
        return db.execute(
            "SELECT key, '' FROM payloads WHERE key NOT IN"
            " (SELECT key FROM payload_refs WHERE holder != 'firing')"
            " UNION SELECT key, run_id FROM payload_refs WHERE holder = 'firing'"
        ).fetchall()


async def test_firings_payloads_go_with_the_sweep_and_the_schedules_with_its_delete(
    platform: Platform,
) -> None:
    p = platform
    wf = await p.create(ECHO)
    created = await p.api.post(url(wf), json={"intervalSeconds": 1, "initialInput": LARGE})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    try:
        await eventually(lambda: _at_least(p, wf, 3), within=30)
        paused = await p.api.post(url(wf, sid) + "/pause")
        assert paused.status_code == 200, paused.text
        await asyncio.sleep(1.5)  # a firing under way when paused
        started = await settled_runs(p, wf)
        firings = set(started.values())
        own = {await schedules_own(p, firing) for firing in firings}
        assert len(own) == 1, "every firing starts with the schedule's one claim"
        of_runs = {key for run_id in started for key in await claims(p, run_id)}
        of_firings = {key for firing in firings for key in await claims(p, firing)}
        firings_only = of_firings - of_runs - own
        # One new copy of the input per firing, in its activity's input: ~300 KB each.
        assert len(firings_only) >= len(firings) >= 3
        assert await present(p, of_firings | of_runs) == of_firings | of_runs

        deleted, more = await sweep(p).sweep()
        assert deleted == len(firings_only) and not more
        assert await present(p, firings_only) == set()
        assert await present(p, of_runs | own) == of_runs | own
        assert firing_refs_left(p) == []
        for run_id in started:
            read = await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")
            assert read.status_code == 200 and read.json()["initialInput"] == LARGE

        # The schedule still fires with its argument.
        fired = await p.api.post(url(wf, sid) + "/trigger")
        assert fired.status_code == 202, fired.text
        await eventually(lambda: _at_least(p, wf, len(started) + 1), within=20)
        assert len(await settled_runs(p, wf)) == len(started) + 1
    finally:
        deleted_schedule = await p.api.delete(url(wf, sid))
    assert deleted_schedule.status_code == 204, deleted_schedule.text
    await sweep(p).sweep()
    assert await present(p, own) == set()
    assert await present(p, of_runs) == of_runs
    assert firing_refs_left(p) == []


async def test_deleting_the_workflow_takes_its_schedules_argument(platform: Platform) -> None:
    p = platform
    wf = await p.create(ECHO)
    body = {"intervalSeconds": 3600, "initialInput": LARGE, "paused": True}
    created = await p.api.post(url(wf), json=body)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    fired = await p.api.post(url(wf, sid) + "/trigger")
    assert fired.status_code == 202, fired.text
    await eventually(lambda: _at_least(p, wf, 1), within=20)
    (firing,) = (await settled_runs(p, wf)).values()
    own = {await schedules_own(p, firing)}
    await sweep(p).sweep()
    assert await present(p, own) == own

    deleted = await p.api.delete(f"/api/v1/workflows/{wf}")
    assert deleted.status_code == 204, deleted.text
    await sweep(p).sweep()
    assert await present(p, own) == set()
    assert firing_refs_left(p) == []


async def test_an_old_firing_reference_stays_while_its_workflow_is_open(platform: Platform) -> None:
    # A firing's activity held past `keep_for` (a backed-up task queue): its input is read
    # once it runs, so the reference stays until Temporal closes the firing's workflow.
    p = platform
    wf = await p.create({"nodes": [delay("hold", 600)]})
    open_id = await p.trigger(wf)
    await p.wait(wf, open_id, {"running"})
    await p.store.put_payload("held", b"h" * 300_000, open_id, PayloadHolder.FIRING)
    assert await sweep(p).sweep() == (0, False)
    assert await p.store.get_payload("held") is not None

    await p.client.get_workflow_handle(open_id).terminate("the test closes it")
    assert await sweep(p).sweep() == (1, False)
    assert await p.store.get_payload("held") is None


async def test_an_older_workers_firing_references_go_on_a_later_sweep(platform: Platform) -> None:
    # Written by a worker before firings' references were recorded (a rolling deploy): the
    # first sweep finds them and records when, a sweep `keep_for` later deletes them.
    p = platform
    wf = await p.create(ECHO)
    ran = await p.trigger(wf)
    await p.wait(wf, ran)
    firing = "sched-x-run-2026-11-30T22:42:55Z"  # closed long ago: Temporal knows it not
    await put_as_older_worker(p.store, "request", b"r" * 300_000, firing)
    await put_as_older_worker(p.store, "input", b"i" * 300_000, firing)
    await put_as_older_worker(p.store, "input", b"i" * 300_000, ran)
    assert await sweep(p).sweep() == (0, False)
    assert await present(p, {"request", "input"}) == {"request", "input"}

    assert await sweep(p).sweep() == (1, False)
    assert await present(p, {"request", "input"}) == {"input"}
    assert firing_refs_left(p) == []
    assert await p.store.get_payload("input") == b"i" * 300_000


async def argument_keys(p: Platform, sid: str) -> set[str]:
    """The keys of the schedule's argument as Temporal holds it now."""
    described = await p.client.get_schedule_handle(sid).describe()
    action = described.raw_description.schedule.action.start_workflow
    return claims_in(action.input.payloads)


async def test_an_update_hands_the_argument_it_replaced_to_the_sweep(platform: Platform) -> None:
    p = platform
    wf = await p.create(ECHO)
    body = {"intervalSeconds": 3600, "initialInput": LARGE, "paused": True}
    created = await p.api.post(url(wf), json=body)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    first = await argument_keys(p, sid)
    other = {**body, "initialInput": {"blob": "y" * 300_000}}
    replaced = await p.api.put(url(wf, sid), json=other)
    assert replaced.status_code == 200, replaced.text
    second = await argument_keys(p, sid)
    assert first and second and first != second
    await sweep(p).sweep()
    assert await present(p, first) == set()
    assert await present(p, second) == second

    # An update that changes nothing keeps it; the schedule fires with it.
    again = await p.api.put(url(wf, sid), json=other)
    assert again.status_code == 200, again.text
    await sweep(p).sweep()
    assert await present(p, second) == second
    fired = await p.api.post(url(wf, sid) + "/trigger")
    assert fired.status_code == 202, fired.text
    await eventually(lambda: _at_least(p, wf, 1), within=20)
    (run_id,) = await settled_runs(p, wf)
    read = await p.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")
    assert read.json()["initialInput"] == other["initialInput"]

    # Under If-Match, to an input small enough for history: the large one goes.
    tag = (await p.api.get(url(wf, sid))).headers["etag"]
    small = {**body, "initialInput": {"x": 1}}
    as_read = await p.api.put(url(wf, sid), json=small, headers={"If-Match": tag})
    assert as_read.status_code == 200, as_read.text
    assert await argument_keys(p, sid) == set()
    await sweep(p).sweep()
    assert await present(p, second) == set()
    deleted = await p.api.delete(url(wf, sid))
    assert deleted.status_code == 204, deleted.text
    await sweep(p).sweep()
    assert firing_refs_left(p) == []


async def _at_least(p: Platform, wf: str, count: int) -> bool:
    return len(await runs_of(p, wf)) >= count


async def test_the_reconciler_sweeps_them_without_run_retention(platform: Platform) -> None:
    p = platform
    await p.store.put_payload("request", b"r" * 300_000, "sched-x-run-1", PayloadHolder.FIRING)
    reconciler = Reconciler(
        p.client,
        p.store,
        task_queue=p.task_queue,
        interval=0.05,
        firing_payloads=FiringPayloads(
            p.client,
            p.store,
            RunMetrics(CollectorRegistry()),
            keep_for=timedelta(0),
            every=timedelta(0),
        ),
    )
    task = asyncio.create_task(reconciler.run_forever())
    try:
        await eventually(lambda: _gone(p, "request"))
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _gone(p: Platform, key: str) -> bool:
    return await p.store.get_payload(key) is None
