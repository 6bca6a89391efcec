"""What JSON data a request may carry into a run: finite, valid Unicode, not too deep.

Python's json accepts NaN/Infinity and lone surrogates (`"\\ud800"`) and nests as deep as
its recursion allows; none of them survive the rest of the way. A lone surrogate cannot be
encoded to store the run (500); NaN came back as null; and a document nested deeper than
pydantic's JSON parser reads (200 levels) was stored but could not be read back: its run's
detail and list answered 500 and the reconciler's pass failed on it every time.
"""

from __future__ import annotations

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


def deeper_than(value: Any, limit: int) -> bool:
    """Whether a JSON-like value nests more than `limit` levels of lists and objects."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def data_problem(value: Any, path: str) -> str | None:
    """The first part of a JSON-like value that cannot be run, as `<path> <problem>`."""
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
