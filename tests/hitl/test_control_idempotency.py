"""Pause and resume under an `Idempotency-Key`: a repeat whose answer was lost is answered
as the first was, and applied once."""

from __future__ import annotations

import uuid

import pytest

from app.services import controls
from app.worker import build_worker
from temporal_workflows.search_attributes import RUN_STATUS
from tests.builders import echo
from tests.hitl.helpers import start, wait_for_gate
from tests.hitl.test_control_errors import running_without_a_worker
from tests.support.platform import Platform, executor_registry
from tests.support.polling import eventually

GATE = {"requiresConfirmation": True}


async def test_a_repeated_pause_and_resume_under_their_keys_apply_once(
    platform: Platform,
) -> None:
    # A pause whose answer was lost, sent again, was a 409 ("Run is paused"): the caller
    # could not tell its pause from someone else's.
    wf, run_id = await start(platform, [echo("gate", GATE)])
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    for _ in range(2):
        paused = await platform.api.post(f"{base}/pause", headers={"Idempotency-Key": "p-1"})
        assert paused.status_code == 200, paused.text
        assert paused.json()["status"] == "paused"
    await platform.wait(wf, run_id, {"paused"})
    # Another key is another pause: refused, the run being paused.
    other = await platform.api.post(f"{base}/pause", headers={"Idempotency-Key": "p-2"})
    assert other.status_code == 409, other.text
    for _ in range(2):
        resumed = await platform.api.post(f"{base}/resume", headers={"Idempotency-Key": "r-1"})
        assert resumed.status_code == 200, resumed.text
    await platform.wait(wf, run_id, {"awaiting_approval"})
    events = await platform.store.list_events(run_id, 0, 100)
    kinds = [e["type"] for e in events]
    assert kinds.count("run_paused") == 1 and kinds.count("run_resumed") == 1, kinds
    # Without a key a repeat is a new request: refused when the run is not paused.
    again = await platform.api.post(f"{base}/resume")
    assert again.status_code == 409, again.text


async def test_a_run_paused_before_its_start_shows_paused_and_resumes(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pause's update is taken in the run's first workflow task, before the run's own
    # code: the run's start then wrote `running` (store and TrellisRunStatus) while it
    # waited paused, and every resume was refused as "Run is running".
    monkeypatch.setattr(controls, "UPDATE_TIMEOUT_SECONDS", 0.5)
    queue = f"later-{uuid.uuid4()}"
    wf, record = await running_without_a_worker(platform, task_queue=queue, status="pending")
    base = f"/api/v1/workflows/{wf}/runs/{record.id}"
    # Without a key a queued run's pause is refused, and says what would be taken.
    unkeyed = await platform.api.post(f"{base}/pause")
    assert unkeyed.status_code == 409, unkeyed.text
    assert unkeyed.json()["error"]["message"] == (
        "Run is pending; only a running or waiting run can be paused (a pause sent with an "
        "Idempotency-Key is taken as the run starts)"
    )
    assert await platform.store.list_events(record.id, 0, 10) == []
    # No worker yet: the keyed pause waits in Temporal ("may still be applied").
    paused = await platform.api.post(f"{base}/pause", headers={"Idempotency-Key": "early"})
    assert paused.status_code == 503, paused.text
    async with (
        executor_registry() as registry,
        build_worker(platform.client, task_queue=queue, store=platform.store, executor=registry),
    ):
        await platform.wait(wf, record.id, {"paused"})
        handle = platform.client.get_workflow_handle(record.id)

        async def shown_paused() -> bool:
            attributes = (await handle.describe()).typed_search_attributes
            return attributes.get(RUN_STATUS) == "paused"

        await eventually(shown_paused)
        resumed = await platform.api.post(f"{base}/resume")
        assert resumed.status_code == 200, resumed.text
        run = await platform.wait(wf, record.id)
        assert run["status"] == "completed"
