"""The metrics directory `trellis api --api-workers N` shares with its API processes
(app/api_metrics.py): one per `trellis api`, named by its pid, so that a later start
removes one whose `trellis api` was killed (SIGKILL runs no clean-up)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "trellis-metrics-"


@contextmanager
def metrics_directory() -> Iterator[str]:
    """A fresh directory, removed on the way out; stale ones are removed first."""
    remove_stale(Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as path:
        yield path


def remove_stale(root: Path) -> list[Path]:
    """Remove this user's metrics directories whose `trellis api` is gone; the removed."""
    removed = []
    for entry in root.glob(f"{PREFIX}*-*"):
        owner, dash, _ = entry.name.removeprefix(PREFIX).partition("-")
        if not (dash and owner.isdigit()):
            continue  # not ours, or named before the pid was in the name: owner unknown
        try:
            found = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            continue
        if _running(int(owner)):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _running(pid: int) -> bool:
    # Our own pid is an earlier process's (pid 1 again in a restarted container): this one
    # has made no directory yet.
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process has that pid now
    return True
