"""`x == null` and `x != null` for every `x`, as CEL defines them.

cel-python compares a string or a map with `null` but refuses an int, a double, a bool, a
list (and `!=` a map) with "no matching overload": `[1, null].filter(x, x != null)` and a
map step's skipped items, `null` in its output, filtered by `x != null`, failed their run.
CEL's equality across types is false: so `x == null` is true only when `x` is null too,
and `!=` is its negation. Runs started before this rule replay as they compared
(NULL_EQUALITY_PATCH, asked only where cel-python refused).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celpy import celtypes
from temporalio import workflow

NULL_EQUALITY_PATCH = "cel-null-equality"


def null_aware(compare: Callable[[Any, Any], Any], *, negate: bool) -> Callable[[Any, Any], Any]:
    """cel-python's `==` (negate False) or `!=` (True), answering where it refused a null."""

    def compared(x: Any, y: Any) -> Any:
        try:
            return compare(x, y)
        except TypeError:
            if not (_null(x) or _null(y)) or not _holds():
                raise
            return celtypes.BoolType((_null(x) and _null(y)) != negate)

    compared.__name__ = getattr(compare, "__name__", "compare")
    return compared


def _null(value: Any) -> bool:
    return value is None or isinstance(value, celtypes.NullType)


def _holds() -> bool:
    return not workflow.in_workflow() or workflow.patched(NULL_EQUALITY_PATCH)
