"""Numbers across A2A: a data part is a protobuf Struct, whose every number is a double.

A double holds every integer up to 2^53 exactly, and none beyond reliably: 2^53 + 1 goes
out as 2^53. So an integer beyond ±2^53 is refused before anything is sent (the agent
would act on another number), and a whole number of 2^53 or more coming back is flagged:
the agent's own SDK may already have rounded it, before Trellis sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# The largest magnitude every integer up to which a double holds exactly.
EXACT_LIMIT = 2**53
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def inexact_integer(value: Any, path: str) -> tuple[str, int] | None:
    """The first integer in `value` beyond ±2^53 that a double would change, with its path
    (`config.items[2].id`); None when every number goes out as it is."""
    return next(((p, v) for p, v in _integers(value, path) if abs(v) > EXACT_LIMIT), None)


def doubtful_numbers(value: Any, path: str) -> list[str]:
    """Paths of the whole numbers in `value` of 2^53 or more: digits may have been lost."""
    return [p for p, v in _integers(value, path) if abs(v) >= EXACT_LIMIT]


def _integers(value: Any, path: str) -> Iterator[tuple[str, int]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            step = f".{key}" if _NAME.fullmatch(str(key)) else f"[{str(key)!r}]"
            yield from _integers(item, f"{path}{step}" if path else step.lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _integers(item, f"{path}[{index}]")
