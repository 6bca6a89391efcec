"""Pause and resume under an `Idempotency-Key`: a repeat whose answer was lost is answered
as the first was, and applied once."""

from __future__ import annotations

from tests.builders import echo
from tests.hitl.helpers import start, wait_for_gate
from tests.support.platform import Platform

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
