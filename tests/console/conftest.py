"""Fixtures of the console tests: one headless Chromium per session, a console per test."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from tests.console.browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, missing_browser
from tests.console.console import Console
from tests.support.identity import ALL_SCOPES, SECRET, as_user, bearer, token
from tests.support.platform import Platform, executor_registry, running_platform

_shots: list[Path] = []


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    """Debian's Chromium under Playwright (the tests skip, saying why, when it is missing)."""
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    # The directory holds this run's screenshots only.
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # another xdist worker may have made it
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
async def console(browser: Any, platform: Platform) -> AsyncIterator[Console]:
    """A browser tab on a fresh platform's console, at 1280 px; fails on any page error."""
    async with Console.open_on(browser, platform, _shots) as opened:
        yield opened


@pytest.fixture(scope="module")
async def module_platform(
    temporal_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    """One platform (built-in executors, `dev` mode) for every test of a module: each test
    makes its own workflows, so they share it without meeting."""
    async with (
        executor_registry() as registry,
        running_platform(temporal_env.client, tmp_path_factory.mktemp("platform"), registry) as p,
    ):
        yield p


@pytest.fixture
async def module_console(browser: Any, module_platform: Platform) -> AsyncIterator[Console]:
    """A browser tab (its own context) on the module's shared platform."""
    async with Console.open_on(browser, module_platform, _shots) as opened:
        yield opened


@pytest.fixture
async def jwt_platform(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Platform]:
    """A whole platform in `jwt` mode; its `api` client calls as alice with every scope, so
    the workflows it creates are alice's (others see them once shared)."""
    async with (
        executor_registry() as registry,
        running_platform(
            temporal_env.client,
            tmp_path,
            registry,
            settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
            headers=as_user("alice"),
        ) as platform,
    ):
        yield platform


@pytest.fixture
async def nested_scopes_console(
    browser: Any, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Console]:
    """A `jwt`-mode console whose tokens keep their scopes at a dotted path
    (`realm_access.scopes`, as Keycloak nests its roles); its `api` client is alice."""
    nested = {"scopes": " ".join(ALL_SCOPES)}
    alice = bearer(token("alice", scope=None, realm_access=nested))
    async with (
        executor_registry() as registry,
        running_platform(
            temporal_env.client,
            tmp_path,
            registry,
            settings_extra={
                "auth_mode": "jwt",
                "jwt_secret": SecretStr(SECRET),
                "jwt_scopes_claim": "realm_access.scopes",
            },
            headers=alice,
        ) as platform,
        Console.open_on(browser, platform, _shots) as opened,
    ):
        yield opened


@pytest.fixture
async def jwt_console(browser: Any, jwt_platform: Platform) -> AsyncIterator[Console]:
    """A browser tab on a `jwt`-mode platform's console (nobody signed in yet)."""
    async with Console.open_on(browser, jwt_platform, _shots) as opened:
        yield opened


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _shots:
        terminalreporter.write_line(
            f"console screenshots ({len(_shots)} files) and page weight: {ARTIFACTS}"
        )
