"""The `trellis` command: the platform's processes and a CLI for people over the REST API."""

from __future__ import annotations

from app.cli.main import main

__all__ = ["main"]
