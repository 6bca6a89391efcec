"""/docs in a real browser: Swagger UI draws every operation under the page's policy, with
every request kept on this machine (it works without the internet)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.console.browser import ARTIFACTS
from tests.console.console import Console

# Each policy violation the page meets, kept where the test can read it.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.effectiveDirective} ${event.blockedURI}`);
});
"""


async def open_docs(console: Console) -> list[str]:
    """Open /docs with every request away from the platform's address refused; the
    addresses it tried."""
    elsewhere: list[str] = []

    async def only_here(route: Any) -> None:
        if route.request.url.startswith(console.base_url + "/"):
            await route.continue_()
        else:
            elsewhere.append(route.request.url)
            await route.abort()

    await console.context.route("**/*", only_here)
    await console.page.add_init_script(RECORD_VIOLATIONS)
    await console.page.goto(console.base_url + "/docs")
    await console.page.wait_for_selector(".opblock")
    await console.page.wait_for_load_state("networkidle")
    return elsewhere


async def test_docs_draws_every_operation_with_nothing_from_elsewhere(console: Console) -> None:
    assert console.base_url.startswith("http://127.0.0.1:")
    elsewhere = await open_docs(console)
    document = (await console.platform.api.get("/openapi.json")).json()
    operations = sum(len(methods) for methods in document["paths"].values())
    assert await console.page.locator(".opblock").count() == operations
    await console.page.screenshot(path=str(ARTIFACTS / "docs-1280.png"))
    assert elsewhere == []
    assert await console.page.evaluate("window.__violations") == []


async def test_try_it_out_calls_the_api_from_the_docs(console: Console) -> None:
    await open_docs(console)
    page = console.page
    healthz = page.locator(".opblock", has=page.locator('[data-path="/healthz"]'))
    await healthz.locator(".opblock-summary").click()
    await healthz.locator("button.try-out__btn").click()
    await healthz.locator("button.execute").click()
    status = healthz.locator(".live-responses-table tbody .response-col_status").first
    await expect(status).to_have_text("200")
    assert await page.evaluate("window.__violations") == []
