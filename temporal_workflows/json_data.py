"""What JSON data a request may carry into a run: finite, valid Unicode, not too deep or wide.

Python's json accepts NaN/Infinity and lone surrogates (`"\\ud800"`) and nests as deep as
its recursion allows; none of them survive the rest of the way. A lone surrogate cannot be
encoded to store the run (500); NaN came back as null; and a document nested deeper than
pydantic's JSON parser reads (200 levels) was stored but could not be read back: its run's
detail and list answered 500 and the reconciler's pass failed on it every time.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Deep enough for any real document, well inside the 200 levels a stored record is read
# with (the record, its node runs and their snapshots add a few levels of their own).
MAX_DATA_DEPTH = 100
# A step's output: containers add a level each (a loop's list of iterations, a parallel
# node's object of children) and Temporal payloads a few more, still below the 200 levels
# pydantic's JSON parser reads (a payload deeper than that cannot be decoded at all).
MAX_OUTPUT_DEPTH = 150
# The largest step output, as JSON, unless TRELLIS_MAX_PAYLOAD_BYTES says otherwise.
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
# JSON values (a key counts with its value) in a run's input, a node's config, a decision's
# data or a step's output: the workflow decodes each inside its task, which Temporal takes
# for deadlocked past 2 s. Decoding grows faster than the count (1,000,000 empty lists:
# 2.5 s idle, 100,000: 0.03 s), and an input of 1,200,000 keys (14.5 MB, within the body
# limit) failed every task of its run for ever; within this, a one-step run's tasks
# (decoding, the step, recording it) stayed well inside 2 s on a 2-core machine at load 12.
MAX_DATA_VALUES = 100_000


# Checked by type, not isinstance: in a workflow, Temporal's sandbox replaces the builtin
# isinstance with a wrapper several calls deep, and a step's output may hold a million
# values (a map's echo steps over a large input spent seconds of a workflow task here).
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _children(item: Any) -> Any:
    """A list's items or an object's values; None for a leaf."""
    kind = type(item)
    if kind is dict or (kind not in _LEAVES and isinstance(item, dict)):
        return item.values()
    if kind is list or (kind not in _LEAVES and isinstance(item, list)):
        return item
    return None


def deeper_than(value: Any, limit: int) -> bool:
    """Whether a JSON-like value nests more than `limit` levels of lists and objects."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = _children(item)
        if children is None:
            continue
        depth += 1
        if depth > limit:
            return True
        stack.extend((child, depth) for child in children if type(child) not in _LEAVES)
    return False


def more_values_than(value: Any, limit: int) -> bool:
    """Whether a JSON-like value holds more than `limit` values, counted only that far."""
    count = 1
    stack: list[Any] = [value]
    while stack:
        children = _children(stack.pop())
        if children is None:
            continue
        # Counted a container at a time, so a million keys stop the count at once.
        count += len(children)
        if count > limit:
            return True
        stack.extend(child for child in children if type(child) not in _LEAVES)
    return False


def bounded_json_size(value: Any, limit: int) -> int:
    """The size of `value` as JSON, or a size past `limit` once that is certain.

    A container's output is its children's (a map's: every item's), each already within
    the limit: serialized part by part, the count stops soon after passing the limit, so
    the check costs at most about twice the limit however large the whole would be.
    """
    if isinstance(value, dict):
        # As json.dumps writes them: `"key": value` parts, ", " between, braces around.
        sizes: Any = (
            len(json.dumps(str(key))) + 2 + len(json.dumps(part, default=str))
            for key, part in value.items()
        )
    elif isinstance(value, list):
        sizes = (len(json.dumps(part, default=str)) for part in value)
    else:
        return len(json.dumps(value, default=str))
    total = 2
    for count, size in enumerate(sizes):
        total += size + (2 if count else 0)
        if total > limit:
            break
    return total


def data_problem(value: Any, path: str) -> str | None:
    """The first part of a JSON-like value that cannot be run, as `<path> <problem>`."""
    if more_values_than(value, MAX_DATA_VALUES):
        return f"{path} holds more than {MAX_DATA_VALUES} JSON values"
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DATA_DEPTH:
            return f"{where} nests deeper than {MAX_DATA_DEPTH} levels"
        if isinstance(item, str):
            if not _valid_unicode(item):
                return f"{where} is not valid Unicode (it holds a lone surrogate)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{where} is not a finite number"
        elif isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                if not _valid_unicode(key):
                    return f"{where} has a key that is not valid Unicode"
                stack.append((sub, f"{where}.{key}", depth + 1))
        elif isinstance(item, list):
            for i in range(len(item) - 1, -1, -1):
                stack.append((item[i], f"{where}[{i}]", depth + 1))
    return None


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
