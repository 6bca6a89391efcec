"""What the people's commands print: the API's answer verbatim with --json, else rich
tables (coloured on a terminal, plain when piped)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
import httpx
from rich.console import Console
from rich.table import Table
from rich.text import Text

from app.cli.api_client import Answer, ApiError, TrellisApi
from app.cli.reader_gone import PipeConsole, write_whole

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
        """--json: the API's answer exactly as sent (nothing for an empty one, a 204);
        otherwise `render(data)`."""
        if self.as_json:
            if answer.text:
                write_whole(answer.text)
            return
        rendered = render(answer.data)
        if rendered is not None:
            self.console.print(rendered)


def api_options(func: F) -> F:
    """Add --url, --token and --json; pass the command a Session; API errors exit 1."""

    @click.option(
        "--url", envvar="TRELLIS_URL", default=DEFAULT_URL, show_default=True,
        callback=_api_url, help="the Trellis API [env TRELLIS_URL]",
    )  # fmt: skip
    @click.option(
        "--token", envvar="TRELLIS_TOKEN", default=None, callback=_bearer_token,
        help="bearer token, when the API requires one [env TRELLIS_TOKEN]",
    )  # fmt: skip
    @click.option("--json", "as_json", is_flag=True, help="print the API's JSON answer as is")
    @functools.wraps(func)
    def wrapper(url: str, token: str | None, as_json: bool, **kwargs: Any) -> Any:
        with session(url, token, as_json) as current:
            return func(current, **kwargs)

    return wrapper  # type: ignore[return-value]


# What a bearer token is made of (RFC 6750): visible ASCII, no space.
_TOKEN = re.compile(r"[\x21-\x7e]+")


def _bearer_token(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A token pasted with a curly quote, a space or a line end is a usage error (exit 2):
    it was a traceback (UnicodeEncodeError), or blamed on the URL (a line end). Space
    around it (a file's last line end) is not part of it."""
    value = value.strip() if value is not None else None
    if not value:
        return None
    if value[:7].lower() == "bearer " and _TOKEN.fullmatch(value[7:].strip()):
        # Copied with the header's scheme, which the CLI adds itself.
        raise click.BadParameter(
            "it starts with 'Bearer ': give the token alone (the CLI sends "
            "`Authorization: Bearer TOKEN`)",
            ctx=ctx,
            param_hint="--token / TRELLIS_TOKEN",
        )
    if not _TOKEN.fullmatch(value):
        raise click.BadParameter(
            "it has characters no token has (a space, a line end, a curly quote or another "
            "non-ASCII character): was it copied with them?",
            ctx=ctx,
            param_hint="--token / TRELLIS_TOKEN",
        )
    return value


def _api_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """An http(s) URL with a host, else a usage error (exit 2, `runs watch` too): httpx
    raised InvalidURL (a traceback) for `http://127.0.0.1:abc`, and a URL without a scheme
    failed every request only once sent (a watch waited its patience for it)."""
    try:
        url = httpx.URL(value)
        problem = None if url.scheme in ("http", "https") else "it is not http:// or https://"
        problem = problem or (None if url.host else "it names no host")
        if not problem and ("?" in value or "#" in value):
            # Each request's path is added to it: a query or fragment sent every one of
            # them to another address, and each failed with a 404 that named none of this.
            problem = "it has a query or a fragment (?…, #…): give the API's address alone"
    except httpx.InvalidURL as exc:
        problem = str(exc)
    if problem:
        raise click.BadParameter(
            f"'{clean(value[:200], one_line=True)}' is not the URL of an API: {problem}",
            ctx=ctx,
            param_hint="--url / TRELLIS_URL",
        )
    return value


@contextmanager
def session(url: str, token: str | None, as_json: bool) -> Iterator[Session]:
    api = TrellisApi(url, token)
    console = PipeConsole(highlight=False)
    if not console.is_terminal:
        # Piped: wide enough that ids stay whole for grep and scripts.
        console = PipeConsole(highlight=False, width=max(console.width, 200))
    try:
        with api.read_as_answered():
            yield Session(api, as_json, console)
    except ApiError as exc:
        raise click.ClickException(clean(exc, one_line=True)) from None
    finally:
        api.close()


# What a terminal acts on rather than shows: C0 controls but tab and newline (ESC starts
# sequences that retitle the window, rewrite the screen or set the clipboard; CR rewrites
# the line), DEL, C1 controls, and the bidi controls that reorder what is shown. Names,
# messages, errors and outputs are written by other users and by steps: shown escaped.
_UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSHOWN_ON_ONE_LINE = re.compile(f"{_UNSHOWN.pattern}|\n")


def clean(value: Any, *, one_line: bool = False) -> str:
    """A value from the API as text: what a terminal would act on written as `\\x1b`."""
    pattern = _UNSHOWN_ON_ONE_LINE if one_line else _UNSHOWN
    return pattern.sub(lambda m: ascii(m.group())[1:-1], str(value))


def shown(*parts: Any) -> Text:
    """Text of API values (never read as rich markup); a `(value, style)` part is styled,
    a Text part kept as it is."""
    pieces: list[Text | tuple[str, str]] = []
    for part in parts:
        if isinstance(part, Text):
            pieces.append(part)
        elif isinstance(part, tuple):
            pieces.append((clean(part[0]), part[1]))
        else:
            pieces.append(Text(clean(part)))
    return Text.assemble(*pieces)


def styled(status: str | None) -> Text:
    status = status or "-"
    return shown((status, STATUS_STYLE.get(status, "")))


def when(value: str | None) -> str:
    """An API timestamp as `YYYY-MM-DD HH:MM:SSZ`: UTC, and says so (beside a schedule's
    time zone, a bare time read as local)."""
    if not value:
        return "-"
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return stamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


_ID_COLUMNS = {"ID", "RUN", "STEP_ID"}


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    listing = Table(title=title, title_justify="left", header_style="bold")
    for column in columns:
        # Ids stay whole (they are what a person copies into the next command).
        listing.add_column(column, overflow="fold", no_wrap=column in _ID_COLUMNS)
    for row in rows:
        listing.add_row(*("-" if v is None else shown(v) for v in row))
    return listing


def page_title(what: str, pages: dict[str, Any]) -> str:
    """`runs (41; page 2 of 3)`; a page past the last says so (`page 99 of 1` did not)."""
    last = max(pages["totalPages"], 1)
    where = f"page {pages['page']} of {last}"
    if pages["page"] > last:
        where = f"page {pages['page']}, past the last ({last})"
    return f"{what} ({pages['total']}; {where})"


def compact(value: Any, limit: int = 200) -> str:
    """A value as one line of JSON, its text as written (`日本`, not `\\u65e5\\u672c`) but
    for what a terminal would act on (see `clean`)."""
    text = json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return clean(text, one_line=True)
