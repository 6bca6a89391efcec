"""Output whose reader went away (`trellis runs watch RUN | head -n 3`): the command ends
at its next write, quietly, with exit status 141 (128 + SIGPIPE), the status a shell
reports for a Unix tool SIGPIPE ended. Python ignores SIGPIPE, so that write raises
BrokenPipeError, which click and rich each turned into exit 1: a watch's exit 1 says the
run failed, which it had not."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import click
from rich.console import Console

READER_GONE = 128 + signal.SIGPIPE


class ReaderGone(Exception):
    """A write found its reader gone. Not an OSError: click's main would take it for one
    (EPIPE) and exit 1."""


class PipeConsole(Console):
    """rich's Console, but a closed pipe is ReaderGone (rich's own answer is SystemExit(1))."""

    def on_broken_pipe(self) -> None:
        raise ReaderGone


class ReaderAwareGroup(click.Group):
    """The root group: a BrokenPipeError out of any command is ReaderGone."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderGone from None


def drop_unread_output() -> None:
    """Point stdout at /dev/null: what is still buffered for the reader that left is
    dropped when the interpreter exits, not reported ("Exception ignored … BrokenPipeError")."""
    try:
        stdout = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (a test's captured output): nothing flushes to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stdout)
    os.close(devnull)


# A write to a pipe whose reader leaves during it is cut short, not refused, and Python
# takes the short count without raising: one write of a 43 MB answer ended at 64 KiB with
# exit 0. Written a piece at a time, with a flush each, the piece after the cut finds the
# reader gone (BrokenPipeError: ReaderGone, exit 141).
PIECE = 64 * 1024


def write_whole(text: str) -> None:
    """`text` and a line end on stdout, all of it or BrokenPipeError."""
    stream = sys.stdout
    for start in range(0, len(text), PIECE):
        stream.write(text[start : start + PIECE])
        stream.flush()
    stream.write("\n")
    stream.flush()
