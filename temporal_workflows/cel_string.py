"""`string(x)` for the values cel-python writes as Python would.

cel-python's `string()` gives `True` for `string(true)` (CEL says `true`), `None` for
`string(null)`, and its own internals for a map or list
(`MapType({StringType('a'): IntType(1)})`), which then reached a step's config or a message.
Those values now convert to their JSON text, compact with sorted keys, as a map or list
does inside a template's text (docs/semantics.md). Runs started before this rule replay as
they converted (STRING_CONVERSION_PATCH, asked only for these values).
"""

from __future__ import annotations

import json
import math
from typing import Any

from celpy import celtypes
from temporalio import workflow

STRING_CONVERSION_PATCH = "cel-string-of-json-values"


def converted(value: Any) -> celtypes.StringType | None:
    """`string(value)` where cel-python's own would be wrong; None where it is right (a
    string, number, bytes, timestamp, duration) or where its error should stand."""
    if (
        not isinstance(
            value, celtypes.BoolType | celtypes.NullType | celtypes.MapType | celtypes.ListType
        )
        and value is not None
    ):
        return None
    if workflow.in_workflow() and not workflow.patched(STRING_CONVERSION_PATCH):
        return None
    text = json.dumps(_plain(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return celtypes.StringType(text)


def _plain(value: Any) -> Any:
    """A CEL value as JSON-ready Python; ValueError for what JSON cannot carry.

    Not `expressions.from_cel`: that one names a bool map key as Python does (`True`) in
    outputs runs already carry, which only a patch of its own could change; here keys are
    written as CEL writes them."""
    if value is None or isinstance(value, celtypes.NullType):
        return None
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        if not math.isfinite(value):
            raise ValueError(
                f"string() of a value holding the double {float(value)}, which JSON cannot carry"
            )
        return float(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, celtypes.MapType):
        return {str(_key(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [_plain(v) for v in value]
    return str(value)  # a string, timestamp or duration, as cel-python writes it


def _key(key: Any) -> Any:
    """A map key as JSON text names it: `true`, not Python's `True`."""
    plain = _plain(key)
    return json.dumps(plain) if isinstance(plain, bool) else plain
