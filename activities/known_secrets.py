"""The secret values this process was given (each catalog's: `env` values, credential
headers, URL passwords, the variables resolved into them), masked out of every log line
and span whoever wrote it (activities/secret_text.py).

The patterns there find a secret by its name (`token=…`, `Bearer …`); a stdio server
printing its token on stdout reached the logs in the MCP SDK's own error (`input_value=
'connected upstream with secret …'`), named by nothing the patterns know.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from activities.executors.url_mask import MASK

# Each owner's values (a catalog's), forgotten with their owner.
_given: weakref.WeakKeyDictionary[object, tuple[str, ...]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
# Every owner's values, longest first (a shorter may be part of a longer): read by every
# log line, from any thread, so replaced whole rather than edited.
_values: tuple[str, ...] = ()


def remember_secrets(owner: object, values: Iterable[str]) -> None:
    """Mask `values` in every line from now on, until `owner` is gone."""
    with _lock:
        _given[owner] = tuple(v for v in values if v)
    weakref.finalize(owner, _gather)
    _gather()


def _gather() -> None:
    global _values
    with _lock:
        found = {v for values in list(_given.values()) for v in values}
        _values = tuple(sorted(found, key=len, reverse=True))


def known_secrets_masked(text: str) -> str:
    """`text` with each secret value this process was given shown as `***`."""
    for value in _values:
        if value in text:
            text = text.replace(value, MASK)
    return text
