"""Fault tests (`pytest -m faults`): real processes killed and restarted under load.

Each test records a tally (tests/faults/harness.py); the session's summary prints them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.harness import REPORTS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if REPORTS:
        terminalreporter.section("fault tallies")
        for tally in REPORTS:
            terminalreporter.write_line(tally.line())
