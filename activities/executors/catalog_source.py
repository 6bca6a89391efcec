"""The catalog file as a process read it at start, and whether the file says otherwise now.

A process keeps the catalog it loaded: a refresh asks the catalog's servers and agents
again, never the file, so an edited file takes a restart of the API and the worker. That
went unnoticed (an audit: an agent added to the file was not listed after a refresh, and a
save naming it was refused), so each refresh looks at the file, cheaply: its size and
modification time, and its content's hash only when those moved.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

# What an unreadable (removed) file hashes to here: never a content's digest.
_UNREADABLE = b""


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _digest(path: Path) -> bytes:
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return _UNREADABLE


class CatalogSource:
    """The file a catalog was loaded from; warns once per change that it no longer matches."""

    def __init__(self, path: Path) -> None:
        # Taken before the file is parsed: a change made while it is read is seen later
        # (a warning too many at worst, never one missed).
        self.path = path
        self._seen = _stat(path)
        self._loaded = _digest(path)
        self._current = self._loaded
        self._warned: bytes | None = None

    def changed(self) -> bool:
        """Whether the file's content differs from what was loaded (hashed only when its
        size or modification time moved since the last look)."""
        seen = _stat(self.path)
        if seen is None or seen != self._seen:
            self._seen = seen
            self._current = _digest(self.path) if seen is not None else _UNREADABLE
        return self._current != self._loaded

    def warn_if_changed(self) -> None:
        """Log one WARNING per new content of the file that the process does not use."""
        if not self.changed():
            self._warned = None  # changed back: a later change is news again
            return
        if self._current == self._warned:
            return
        self._warned = self._current
        log.warning(
            "executor catalog %s has changed since this process read it at start; it keeps"
            " the catalog it loaded (a refresh asks the catalog's servers and agents again,"
            " not the file): restart the API and the worker to use the file as it is now",
            self.path,
        )
