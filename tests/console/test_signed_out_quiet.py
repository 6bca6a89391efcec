"""While the sign-in page is shown (`jwt` mode, the token expired), the page behind it is
stopped: the inbox's refresh and a run's event stream send nothing until the user signs
in again, then resume."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.console.console import Console
from tests.console.definitions import confirm_gate
from tests.console.test_sign_in import READ_AND_CONTROL, sign_in
from tests.console.test_signed_in_again import sign_in_again
from tests.hitl.helpers import control, wait_for_gate
from tests.support.identity import token
from tests.support.polling import eventually

# Longer than three of the inbox's 10 s refreshes.
A_WHILE = 35_000  # ms


def api_requests(page: Any) -> list[str]:
    """The URL of every API request the tab sends from now on."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/api/v1/" in r.url else None)
    return sent


async def signed_in(console: Console) -> None:
    await console.goto("/console/sign-in")
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await console.drawn()


async def shows_sign_in(console: Console) -> None:
    await expect(console.page.get_by_role("heading", name="Sign in")).to_be_visible()
    await console.drawn()


async def inbox_refreshes_once_after_signing_in(console: Console, sent: list[str]) -> None:
    """Sign in again: the inbox refreshes on its 10 s timer, once, with no refresh left
    over from before signing in."""
    await sign_in(console, token("alice", READ_AND_CONTROL))
    await expect(console.page.get_by_role("heading", name="Approvals")).to_be_visible()
    await console.drawn()
    sent.clear()
    await console.page.clock.run_for(10_500)
    assert len(sent) == 1 and "/approvals" in sent[0], sent


async def test_an_inbox_opened_with_an_expired_token_stops_refreshing_until_signed_in(
    jwt_console: Console,
) -> None:
    console, page = jwt_console, jwt_console.page
    await page.clock.install()
    await signed_in(console)
    await sign_in_again(console)
    await console.goto("/console/approvals")  # a reload, after the token ran out
    await shows_sign_in(console)

    sent = api_requests(page)
    await page.clock.run_for(A_WHILE)
    assert sent == [], "requests sent behind the sign-in page"

    await inbox_refreshes_once_after_signing_in(console, sent)


async def test_an_inbox_whose_token_runs_out_stops_refreshing_until_signed_in(
    jwt_console: Console,
) -> None:
    console, page = jwt_console, jwt_console.page
    await page.clock.install()
    await signed_in(console)
    await sign_in_again(console)
    await page.clock.run_for(10_500)  # the next refresh meets the expired token
    await shows_sign_in(console)

    sent = api_requests(page)
    await page.clock.run_for(A_WHILE)
    assert sent == [], "requests sent behind the sign-in page"

    await inbox_refreshes_once_after_signing_in(console, sent)


async def test_a_run_page_whose_token_runs_out_stops_its_stream_until_signed_in(
    jwt_console: Console,
) -> None:
    console, page = jwt_console, jwt_console.page
    p = console.platform
    wf = await p.create({"nodes": confirm_gate()})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "ship")
    events = f"/runs/{run_id}/events"
    closed: list[str] = []
    page.on("requestfailed", lambda r: closed.append(r.url) if r.url.endswith(events) else None)
    await page.clock.install()
    await signed_in(console)
    await console.goto(f"/console/workflows/{wf}/runs/{run_id}")
    await sign_in_again(console)
    # The run moves on: the page reads it again, with the expired token.
    assert (await control(p, wf, run_id, "pause")).is_success
    await shows_sign_in(console)

    sent = api_requests(page)
    await page.clock.run_for(A_WHILE)
    assert sent == [], "requests sent behind the sign-in page"
    assert closed, "the run's event stream stayed open behind the sign-in page"

    await sign_in(console, token("alice", READ_AND_CONTROL))
    await console.drawn()
    status = page.locator("[data-role=run-status] .badge")
    await expect(status).to_have_text("paused")
    # Followed again (its stream is asked for after the page is drawn).
    await eventually(lambda: any(u.endswith(events) for u in sent))
    assert (await control(p, wf, run_id, "resume")).is_success
    await expect(status).to_have_text("awaiting approval")  # live, through the new stream
