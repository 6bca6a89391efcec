"""The worker's ready file: written once it polls, removed only by the process that wrote it.

After `kill -9` of `trellis dev` and an immediate restart, the old worker (told to stop by
its parent's death) may still be shutting down while the new one announces itself in the
same data dir; the file names its writer, so the old worker's clean-up leaves the new one's
file, and `trellis dev` waits for the file its own worker wrote.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from app.startup_failure import StartupFailure


class ReadyFileError(StartupFailure):
    """The ready file could not be written once the worker polled: it stops (exit 1), as
    its supervisor would otherwise wait for the file in vain."""


def ready_note() -> str:
    """What this process writes into its ready file: its pid and a token of its own."""
    # The token tells this writer apart from an earlier process that had the same pid.
    return f"ready pid={os.getpid()} token={secrets.token_hex(8)}\n"


def write_ready(path: Path, note: str) -> None:
    """Write `note` to `path` atomically: a reader never sees half a file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(note)
    os.replace(partial, path)


def remove_ready(path: Path, note: str) -> bool:
    """Remove `path` only if it still holds `note` (this writer's); True if removed."""
    try:
        if path.read_text() != note:
            return False
        path.unlink()
    except OSError:  # gone, or never written (ReadyFileError)
        return False
    return True


def ready_writer(path: Path) -> int | None:
    """The pid of the process that wrote `path`; None when it is absent or not a ready file."""
    try:
        fields = dict(f.split("=", 1) for f in path.read_text().split() if "=" in f)
        return int(fields["pid"])
    except (FileNotFoundError, KeyError, ValueError):
        return None
