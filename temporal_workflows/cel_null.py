"""`x == null` and `x != null` for every `x`, as CEL defines them, also inside lists and maps.

cel-python compares a string or a map with `null` but refuses an int, a double, a bool, a
list (and `!=` a map) with "no matching overload": `[1, null].filter(x, x != null)` and a
map step's skipped items, `null` in its output, filtered by `x != null`, failed their run.
CEL's equality across types is false: so `x == null` is true only when `x` is null too,
and `!=` is its negation. Runs started before this rule replay as they compared
(NULL_EQUALITY_PATCH, asked only where cel-python refused).

cel-python's list and map equality compares element pairs the same way, so a null paired
with a number inside them (`[1] == [null]`, `{"a": 1} == {"a": null}`) refused the whole
comparison too. Such a pair is now simply not equal, and the pairs combine as cel-python
combines them (a false pair decides `==`, an error otherwise stays one): `[1] == ["a"]`,
which holds no null, is still refused. Runs started before replay as they compared
(NESTED_NULL_EQUALITY_PATCH, asked only where cel-python refused and this rule answers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

from celpy import celtypes
from temporalio import workflow

NULL_EQUALITY_PATCH = "cel-null-equality"
NESTED_NULL_EQUALITY_PATCH = "cel-nested-null-equality"


def null_aware(compare: Callable[[Any, Any], Any], *, negate: bool) -> Callable[[Any, Any], Any]:
    """cel-python's `==` (negate False) or `!=` (True), answering where it refused a null."""

    def compared(x: Any, y: Any) -> Any:
        try:
            return compare(x, y)
        except TypeError:
            if _null(x) or _null(y):
                if not _holds(NULL_EQUALITY_PATCH):
                    raise
                return celtypes.BoolType((_null(x) and _null(y)) != negate)
            equal = _equal(x, y) if _containers(x, y) else None
            if not isinstance(equal, celtypes.BoolType) or not _holds(NESTED_NULL_EQUALITY_PATCH):
                raise
            return celtypes.BoolType(bool(equal) != negate)

    compared.__name__ = getattr(compare, "__name__", "compare")
    return compared


def _equal(x: Any, y: Any) -> celtypes.BoolType | TypeError:
    """CEL equality as cel-python's ListType and MapType compute it, except that a null
    paired with another value is false where cel-python refused it; a refusal that is left
    comes back as the TypeError (not raised: a false pair beside it still decides)."""
    if _null(x) or _null(y):
        return celtypes.BoolType(_null(x) and _null(y))
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return celtypes.BoolType(False)
        return _all(_equal(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        if x.keys() != y.keys():
            return celtypes.BoolType(False)
        return _all(_equal(x[k], y[k]) for k in x)
    try:
        return celtypes.BoolType(x == y)
    except TypeError as exc:
        return exc


def _all(pairs: Any) -> celtypes.BoolType | TypeError:
    # cel-python's own `&&` of the pairs: false wins over a refusal, two refusals refuse.
    try:
        return reduce(celtypes.logical_and, pairs, celtypes.BoolType(True))  # type: ignore[arg-type]
    except TypeError as exc:
        return exc


def _containers(x: Any, y: Any) -> bool:
    return (isinstance(x, list) and isinstance(y, list)) or (
        isinstance(x, Mapping) and isinstance(y, Mapping)
    )


def _null(value: Any) -> bool:
    return value is None or isinstance(value, celtypes.NullType)


def _holds(patch: str) -> bool:
    return not workflow.in_workflow() or workflow.patched(patch)
