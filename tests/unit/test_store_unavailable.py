"""A store that cannot be reached for now is `StoreUnavailable` (503), not a plain failure."""

from __future__ import annotations

import sqlite3

import pytest

from activities.store.base import StoreError, StoreUnavailable
from activities.store.sqlite import _store_error


@pytest.mark.parametrize(
    "message",
    [
        "database is locked",
        "unable to open database file",
        "disk I/O error",
        "database or disk is full",
    ],
)
def test_sqlite_errors_that_pass_are_unavailable(message: str) -> None:
    assert isinstance(_store_error(sqlite3.OperationalError(message)), StoreUnavailable)


def test_other_sqlite_errors_are_plain_store_errors() -> None:
    found = _store_error(sqlite3.OperationalError("no such column: x"))
    assert isinstance(found, StoreError) and not isinstance(found, StoreUnavailable)
