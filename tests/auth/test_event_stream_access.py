"""An open event stream answers to the run's ACL and the caller's token for as long as it
is open, not only when it opens: a revoked grant or an expired token ends it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from app.auth.caller import READ, Caller
from app.auth.stream_access import StreamAccess
from app.auth.tokens import LEEWAY_SECONDS
from app.routes import events as events_route
from tests.api.helpers import API
from tests.builders import echo
from tests.events.sse import Message, messages
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.identity import as_user
from tests.support.platform import Platform
from tests.support.polling import eventually

BOB = as_user("bob", [READ])
GATED = [echo("send", {"requiresConfirmation": True}), echo("after")]


@dataclass
class OpenStream:
    """A run's event stream read in the background, as a browser would keep it open."""

    received: list[Message] = field(default_factory=list)
    status: int | None = None
    task: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        return self.task is not None and self.task.done()

    def kinds(self) -> list[str | None]:
        return [m.event for m in self.received]


@contextlib.asynccontextmanager
async def open_stream(
    p: Platform, wf: str, run_id: str, headers: dict[str, str] | None = None
) -> AsyncIterator[OpenStream]:
    stream = OpenStream()

    async def follow() -> None:
        url = f"{API}/workflows/{wf}/runs/{run_id}/events"
        async with p.api.stream("GET", url, headers=headers or {}, timeout=60) as response:
            stream.status = response.status_code
            async for message in messages(response):
                if message.event:
                    stream.received.append(message)

    stream.task = asyncio.create_task(follow())
    try:
        # Open and live: the gate's event (written before it opened) has arrived.
        await eventually(lambda: "awaiting_approval" in stream.kinds() or stream.closed)
        assert stream.status == 200 and "awaiting_approval" in stream.kinds(), stream.kinds()
        yield stream
    finally:
        stream.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stream.task


async def gated_run_shared_with_bob(p: Platform) -> tuple[str, str]:
    wf, run_id = await start(p, GATED)
    await set_grants(p, wf, ["user:bob"])
    await wait_for_gate(p, wf, run_id, "send")
    return wf, run_id


async def set_grants(p: Platform, wf: str, viewers: list[str]) -> None:
    grants = [{"principal": who, "permissions": ["VIEW"]} for who in viewers]
    response = await p.api.put(f"{API}/workflows/{wf}/permissions", json={"grants": grants})
    assert response.status_code == 200, response.text


async def last_event_id(p: Platform, run_id: str) -> int:
    return max(e["id"] for e in await p.store.list_events(run_id, 0, 1000))


async def test_a_revoked_grantees_stream_sends_nothing_written_after_the_revocation(
    jwt_platform: Platform,
) -> None:
    p = jwt_platform
    wf, run_id = await gated_run_shared_with_bob(p)
    async with open_stream(p, wf, run_id, BOB) as bobs:
        await set_grants(p, wf, [])
        revoked_at = await last_event_id(p, run_id)
        run_url = f"{API}/workflows/{wf}/runs/{run_id}"
        assert (await p.api.get(run_url, headers=BOB)).status_code == 404
        response = await approve(p, wf, run_id, stepId="send", resolution="confirm")
        assert response.status_code == 200, response.text
        assert (await p.wait(wf, run_id))["status"] == "completed"
        await eventually(lambda: bobs.closed)
    assert await last_event_id(p, run_id) > revoked_at  # the run went on writing events
    assert all(int(m.id or 0) <= revoked_at for m in bobs.received), bobs.kinds()
    assert "run_completed" not in bobs.kinds()


async def test_a_silent_stream_ends_soon_after_its_grant_is_revoked(
    jwt_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_route, "ACCESS_RECHECK_SECONDS", 0.5)
    p = jwt_platform
    wf, run_id = await gated_run_shared_with_bob(p)
    async with open_stream(p, wf, run_id, BOB) as bobs:
        await set_grants(p, wf, [])
        await eventually(lambda: bobs.closed, within=5)
        run = (await p.api.get(f"{API}/workflows/{wf}/runs/{run_id}")).json()
        assert run["status"] == "awaiting_approval"  # still held: only the access ended it
    reconnect = await p.api.get(f"{API}/workflows/{wf}/runs/{run_id}/events", headers=BOB)
    assert reconnect.status_code == 404


async def test_a_stream_ends_when_its_token_expires(jwt_platform: Platform) -> None:
    p = jwt_platform
    wf, run_id = await start(p, GATED)
    await wait_for_gate(p, wf, run_id, "send")
    # The owner's own token, still accepted for 3 s (its `exp` is past, within the leeway).
    expiring = as_user("alice", [READ], expires_in=-(LEEWAY_SECONDS - 3))
    async with open_stream(p, wf, run_id, expiring) as alices:
        await eventually(lambda: alices.closed, within=10)
        run = (await p.api.get(f"{API}/workflows/{wf}/runs/{run_id}")).json()
        assert run["status"] == "awaiting_approval"
    reconnect = await p.api.get(f"{API}/workflows/{wf}/runs/{run_id}/events", headers=expiring)
    assert reconnect.status_code == 401


async def test_the_owners_stream_runs_on_while_a_grantee_is_revoked(
    jwt_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_route, "ACCESS_RECHECK_SECONDS", 0.2)
    p = jwt_platform
    wf, run_id = await gated_run_shared_with_bob(p)
    async with open_stream(p, wf, run_id) as alices, open_stream(p, wf, run_id, BOB) as bobs:
        await set_grants(p, wf, [])
        # Bob's stream closing shows the idle re-checks have run; the owner's passed them.
        await eventually(lambda: bobs.closed, within=5)
        assert not alices.closed
        response = await approve(p, wf, run_id, stepId="send", resolution="confirm")
        assert response.status_code == 200, response.text
        await eventually(lambda: alices.closed)
    assert alices.kinds()[-1] == "run_completed", alices.kinds()
    assert "requirement_resolved" in alices.kinds()


async def test_a_deleted_workflow_is_no_longer_readable_by_its_streams(
    jwt_platform: Platform,
) -> None:
    p = jwt_platform
    wf, run_id = await start(p, GATED)
    await wait_for_gate(p, wf, run_id, "send")
    access = StreamAccess(p.store, Caller(sub="alice"), wf, run_id, recheck_seconds=60)
    assert await access.allows()
    assert (await p.api.delete(f"{API}/workflows/{wf}")).status_code == 204
    assert not await access.allows()
