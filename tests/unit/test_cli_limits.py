"""The limits the CLI checks its flags against are the API's own: the CLI cannot import
them (FastAPI, pydantic), so this holds the copies equal."""

from __future__ import annotations

import typing

from activities.store.access import PERMISSIONS
from app.cli import limits
from app.deps import Page, PerPage
from app.schemas.schedule import ScheduleCreate


def bounds(annotated: typing.Any) -> tuple[int, int]:
    metadata = typing.get_args(annotated)[1].metadata
    return metadata[0].ge, metadata[1].le


def test_paging_is_the_apis() -> None:
    assert bounds(Page) == (1, limits.MAX_PAGE)
    assert bounds(PerPage) == (1, limits.MAX_PER_PAGE)


def test_a_schedules_interval_is_the_apis() -> None:
    interval = ScheduleCreate.model_json_schema()["properties"]["intervalSeconds"]
    assert (interval["minimum"], interval["maximum"]) == (1, limits.MAX_INTERVAL_SECONDS)


def test_principals_and_permissions_are_the_apis() -> None:
    # The CLI checks a grant's principal with temporal_workflows/principals.py itself;
    # PRINCIPAL is the shape of any stored one (which --revoke takes).
    assert limits.PRINCIPAL.fullmatch("user:a b\x00")
    assert limits.PERMISSIONS == PERMISSIONS
