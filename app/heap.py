"""Keeping the garbage collector's full passes short in the long-running processes.

After start-up a process holds ~200,000 objects that live as long as it does (modules,
pydantic schemas, the app, the Temporal client). A full collection walks all of them: on
this 2-core machine ~120 ms with the event loop stopped, which every request in flight
waits out — under 50 `wrk` clients it was most of the API's p99 (0.5 to 1 s). Frozen, they
are left out of every collection; what the process creates later is collected as usual.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect start-up's garbage once, then freeze what is left (call once started)."""
    gc.collect()
    gc.freeze()
