"""The cron expressions a schedule accepts: one regular expression, published in the
OpenAPI document and enforced on the body, so what the schema allows Temporal accepts.

Five fields (minute hour day-of-month month day-of-week), each `*` or a comma list of
values and ranges, any of them with a `/step`; months and weekdays also by name
(`JAN`, `MON`); or one of `@yearly @annually @monthly @weekly @daily @midnight @hourly`.
A range that runs backwards wraps around (`FRI-MON`, `22-2`): Temporal refuses those, so
`normalized` rewrites them into two ranges (`FRI-SAT,SUN-MON`) before the schedule is made,
each stepping from its own start. A weekday range ending at 7 (Sunday, after Saturday)
runs to 6, and Sunday is added when the range's step reaches 7.
"""

from __future__ import annotations

import re

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# Per field: the value syntax, and the lowest and highest value (for wrapping ranges).
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("[1-5]?[0-9]", 0, 59, ()),
    ("1?[0-9]|2[0-3]", 0, 23, ()),
    ("[1-9]|[12][0-9]|3[01]", 1, 31, ()),
    ("[1-9]|1[0-2]|" + "|".join(_MONTHS), 1, 12, _MONTHS),
    ("[0-7]|" + "|".join(_DAYS), 0, 6, _DAYS),
)
_STEP = "(?:/[1-9][0-9]{0,2})?"


def _field(value: str) -> str:
    item = f"(?:\\*|(?:{value})(?:-(?:{value}))?){_STEP}"
    return f"{item}(?:,{item})*"


MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_PATTERN = (
    "^(?:" + " ".join(_field(value) for value, *_ in _FIELDS) + "|" + "|".join(MACROS) + ")$"
)
_CRON = re.compile(CRON_PATTERN)


def is_cron(text: str) -> bool:
    # Whole: Python's `$` matches before a final line end ("0 * * * *\n" was kept).
    return bool(_CRON.fullmatch(text))


def normalized(text: str) -> str:
    """`text` (a valid cron) with every backwards range split in two at the wrap."""
    if text.startswith("@"):
        return text
    fields = text.split(" ")
    return " ".join(
        ",".join(_unwrap(item, low, high, names) for item in field.split(","))
        for field, (_, low, high, names) in zip(fields, _FIELDS, strict=True)
    )


def _unwrap(item: str, low: int, high: int, names: tuple[str, ...]) -> str:
    span, slash, step = item.partition("/")
    start, dash, end = span.partition("-")
    if not dash or start == "*":
        return item
    first, last = _number(start, names, low), _number(end, names, low)
    suffix = f"{slash}{step}"
    if last > high:
        # Weekday 7 ends the range: Sunday again, after Saturday (`0-7` is every day,
        # `5-7/2` Friday and Sunday). Temporal's weekdays end at 6.
        if first > high:
            return str(low)
        hits_sunday = (last - first) % int(step or 1) == 0
        return f"{first}-{high}{suffix}" + (f",{low}" if hits_sunday else "")
    # Each part of a wrapped range steps from its own start (`22-2/2`: 22, 0, 2).
    first = low if first > high else first  # a range from weekday 7 starts on Sunday
    if first <= last:
        return f"{first}-{last}{suffix}"
    return f"{first}-{high}{suffix},{low}-{last}{suffix}"


def _number(value: str, names: tuple[str, ...], low: int) -> int:
    return names.index(value) + low if value in names else int(value)
