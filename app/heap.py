"""The garbage collector in the long-running processes: off while they start, and its full
passes kept short once they have.

Start-up (importing the app, building its schemas) makes hundreds of thousands of objects
that live as long as the process, and the collector's passes over them find next to
nothing to free: ~0.8 s of CPU of a `trellis api` start on this 2-core machine
(`python -m bench.server_start`). So `trellis api` and `trellis worker` start with it paused.

After start-up a process holds ~200,000 objects that live as long as it does (modules,
pydantic schemas, the app, the Temporal client). A full collection walks all of them: on
this 2-core machine ~120 ms with the event loop stopped, which every request in flight
waits out — under 50 `wrk` clients it was most of the API's p99 (0.5 to 1 s). Frozen, they
are left out of every collection; what the process creates later is collected as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def pause_collector() -> None:
    """No collection until `freeze_startup_heap` (call first thing in a starting process)."""
    gc.disable()


@contextlib.contextmanager
def collector_back_if_start_fails() -> Iterator[None]:
    """A start that fails lets the collector run again: whoever goes on in the process (a
    caller, the test suite: a refused in-process start left it off for every later test)
    must not be left without one."""
    try:
        yield
    except BaseException:
        gc.enable()
        raise


def freeze_startup_heap() -> None:
    """Collect start-up's garbage once, freeze what is left, and let the collector run
    again (call once started)."""
    gc.collect()
    gc.freeze()
    gc.enable()
