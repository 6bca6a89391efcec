"""The API's limits on the values of the CLI's flags, checked by click before anything is
sent: a value past them is a usage error naming the flag (exit 2), not the API's 400 or
422 naming its field (exit 1). The numbers are the API's own (app/deps.py, the schemas);
the CLI cannot import them without FastAPI and pydantic, so
tests/unit/test_cli_limits.py holds them equal."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

# app/deps.py: Page and PerPage, the paging of every list.
MAX_PAGE = 1_000_000
MAX_PER_PAGE = 100
# app/schemas/schedule.py: ScheduleCreate.interval_seconds.
MAX_INTERVAL_SECONDS = 366 * 86_400
# activities/store/access.py: Grant, a stored one (any name, which --revoke may take).
PRINCIPAL = re.compile(r"^(user|role):.+$", re.DOTALL)
PERMISSIONS = ("VIEW", "EDIT", "DELETE", "SHARE")


def page_options(per_page: int) -> Callable[[Any], Any]:
    """`--page N` and `--per-page N` (default `per_page`), within the API's paging."""

    def add(func: Any) -> Any:
        func = click.option(
            "--per-page", type=click.IntRange(1, MAX_PER_PAGE), default=per_page,
            show_default=True, metavar="N", help=f"at most {MAX_PER_PAGE}",
        )(func)  # fmt: skip
        return click.option(
            "--page", type=click.IntRange(1, MAX_PAGE), default=1, show_default=True,
            metavar="N",
        )(func)  # fmt: skip

    return add
