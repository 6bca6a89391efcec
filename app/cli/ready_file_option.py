"""`trellis worker --ready-file`: refused at start when the worker could never write it.

A file in a missing directory was taken, and the worker ran without ever writing it and
without a word (its writer's error went unread): a compose health check (`test -f`) never
passed, with nothing saying why.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from app.cli.bad_value import BadValue


def ready_file_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """The ready file, once its directory is known to take it; BadValue (exit 2) if not."""
    if value is None:
        return None
    if value == "":
        raise BadValue(value, "must not be empty", ctx, param)
    path = Path(value)
    directory = path.parent
    if path.is_dir():
        raise BadValue(value, "is a directory", ctx, param)
    if not directory.exists():
        raise BadValue(value, f"its directory {directory} does not exist", ctx, param)
    if not directory.is_dir():
        raise BadValue(value, f"its directory {directory} is not a directory", ctx, param)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise BadValue(value, f"its directory {directory} is not writable", ctx, param)
    return path
