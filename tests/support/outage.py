"""A store outage on demand: the real store behind a switch.

SQLite in WAL mode cannot be made unreachable from outside (readers are never blocked),
and MongoDB cannot run here; so the switch raises what the MongoDB store raises when its
server is gone (`StoreUnavailable`) for every call made while it is down. Everything else
is the real store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from activities.store.base import Store, StoreUnavailable

# Not store operations: they run while the store is down as they would in production.
_PASS_THROUGH = frozenset({"watch_event_runs", "connect", "close"})


class StoreOutage:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.down = False
        self.refused = 0

    @property
    def store(self) -> Store:
        """This switch, typed as the store it stands in for."""
        return cast(Store, self)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name in _PASS_THROUGH or not callable(found):
            return found
        return self._guarded(found)

    def _guarded(self, method: Callable[..., Any]) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.refused += 1
                raise StoreUnavailable("store unavailable (outage under test)")
            return await method(*args, **kwargs)

        return call
