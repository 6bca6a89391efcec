"""A console tab for a test: open pages, take screenshots at both widths, check accessibility."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.console.browser import ARTIFACTS, NARROW, WIDE
from tests.hitl.helpers import start, wait_for_gate
from tests.support.platform import Platform

A11Y_CHECKS = (Path(__file__).parent / "a11y.js").read_text()


@dataclass
class Console:
    platform: Platform
    context: Any
    page: Any
    base_url: str
    shots: list[Path]
    errors: list[str] = field(default_factory=list)

    @classmethod
    @asynccontextmanager
    async def open_on(
        cls, browser: Any, platform: Platform, shots: list[Path]
    ) -> AsyncIterator[Console]:
        context = await browser.new_context(viewport=WIDE)
        page = await context.new_page()
        console = cls(platform, context, page, str(platform.api.base_url).rstrip("/"), shots)
        page.on("pageerror", lambda error: console.errors.append(str(error)))
        try:
            yield console
        finally:
            await context.close()
        assert console.errors == [], f"errors in the page: {console.errors}"

    async def at_gate(
        self, nodes: list[dict[str, Any]], step_id: str, initial: dict[str, Any] | None = None
    ) -> tuple[str, str]:
        """A workflow of `nodes` started, its run waiting at `step_id`'s gate: (wf, run)."""
        wf, run_id = await start(self.platform, nodes, initial)
        await wait_for_gate(self.platform, wf, run_id, step_id)
        return wf, run_id

    async def goto(self, path: str, page: Any = None) -> Any:
        """Open a console path and wait until its page is drawn."""
        page = page or self.page
        # The tab in use must be in front: Chromium throttles the timers and animation
        # frames of background tabs, which slows every action in them to about a second.
        await page.bring_to_front()
        await page.goto(self.base_url + path)
        await self.drawn(page)
        return page

    async def drawn(self, page: Any = None) -> None:
        await (page or self.page).wait_for_selector("main h1:not(:empty)", state="attached")
        await (page or self.page).wait_for_selector("main:not([aria-busy])", state="attached")

    async def new_tab(self) -> Any:
        page = await self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        return page

    async def shoot(self, name: str, page: Any = None) -> None:
        """Full-page screenshots at 1280 and 390 px; at 390 nothing may overflow sideways."""
        page = page or self.page
        await page.bring_to_front()
        for size, label in ((WIDE, "1280"), (NARROW, "390")):
            await page.set_viewport_size(size)
            await page.wait_for_timeout(50)
            if size is NARROW:
                overflow = await page.evaluate(
                    "() => document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 0, f"{name}: the page is {overflow}px wider than 390px"
            path = ARTIFACTS / f"{name}-{label}.png"
            await page.screenshot(path=str(path), full_page=True)
            self.shots.append(path)
        await page.set_viewport_size(WIDE)

    async def check_accessible(self, page: Any = None) -> None:
        """Labels and names for every control, one h1, unique ids, AA text contrast."""
        await (page or self.page).bring_to_front()
        for size in (WIDE, NARROW):
            await (page or self.page).set_viewport_size(size)
            problems = await (page or self.page).evaluate(A11Y_CHECKS)
            assert problems == [], problems
        await (page or self.page).set_viewport_size(WIDE)


def first_answer_lost(keys: list[str | None]) -> Callable[[Any], Awaitable[None]]:
    """A route handler for POSTs: the first reaches the API, whose answer the browser never
    gets (the connection is reset); later ones pass. Each POST's Idempotency-Key is noted."""

    async def handle(route: Any) -> None:
        if route.request.method != "POST":
            await route.continue_()
            return
        keys.append(route.request.headers.get("idempotency-key"))
        if len(keys) == 1:
            await route.fetch()  # the API acts on it
            await route.abort("connectionreset")
        else:
            await route.continue_()

    return handle
