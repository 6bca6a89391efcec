"""What the people's commands print: the API's answer verbatim with --json, else rich
tables (coloured on a terminal, plain when piped)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from app.cli.api_client import Answer, ApiError, TrellisApi

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_URL = "http://127.0.0.1:8000"
STATUS_STYLE = {
    "completed": "green",
    "running": "cyan",
    "pending": "dim",
    "paused": "yellow",
    "awaiting_approval": "magenta",
    "failed": "red",
    "cancelled": "red",
    "skipped": "dim",
}


@dataclass
class Session:
    """One command's API client and output mode."""

    api: TrellisApi
    as_json: bool
    console: Console

    def emit(self, answer: Answer, render: Callable[[Any], Any]) -> None:
        """--json: the API's answer exactly as sent; otherwise `render(data)`."""
        if self.as_json:
            click.echo(answer.text)
            return
        shown = render(answer.data)
        if shown is not None:
            self.console.print(shown)


def api_options(func: F) -> F:
    """Add --url, --token and --json; pass the command a Session; API errors exit 1."""

    @click.option(
        "--url", envvar="TRELLIS_URL", default=DEFAULT_URL, show_default=True,
        help="the Trellis API [env TRELLIS_URL]",
    )  # fmt: skip
    @click.option(
        "--token", envvar="TRELLIS_TOKEN", default=None,
        help="bearer token, when the API requires one [env TRELLIS_TOKEN]",
    )  # fmt: skip
    @click.option("--json", "as_json", is_flag=True, help="print the API's JSON answer as is")
    @functools.wraps(func)
    def wrapper(url: str, token: str | None, as_json: bool, **kwargs: Any) -> Any:
        with session(url, token, as_json) as current:
            return func(current, **kwargs)

    return wrapper  # type: ignore[return-value]


@contextmanager
def session(url: str, token: str | None, as_json: bool) -> Iterator[Session]:
    api = TrellisApi(url, token)
    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped: wide enough that ids stay whole for grep and scripts.
        console = Console(highlight=False, width=max(console.width, 200))
    try:
        yield Session(api, as_json, console)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        api.close()


def styled(status: str | None) -> str:
    status = status or "-"
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/{style}]" if style else status


def when(value: str | None) -> str:
    """An API timestamp as local-free `YYYY-MM-DD HH:MM:SS` (UTC)."""
    if not value:
        return "-"
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return stamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


_ID_COLUMNS = {"ID", "RUN", "STEP_ID"}


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    shown = Table(title=title, title_justify="left", header_style="bold")
    for column in columns:
        # Ids stay whole (they are what a person copies into the next command).
        shown.add_column(column, overflow="fold", no_wrap=column in _ID_COLUMNS)
    for row in rows:
        shown.add_row(*("-" if v is None else str(v) for v in row))
    return shown


def compact(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
