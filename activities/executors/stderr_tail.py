"""A stdio MCP server's stderr: logged line by line, its last lines kept for the error a
failed start reports.

A server that exits before the handshake (a missing module, a bad flag) leaves the SDK
only "Connection closed"; why is in what the server wrote to stderr, which used to reach
the worker's own stderr and nowhere else. The server writes into a pipe; a daemon thread
reads it to its end (the server's exit), so a chatty server never blocks on it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from typing import TextIO

from activities.executors.base import describe_error

log = logging.getLogger("trellis.mcp")

# Lines kept for an error, and characters of each: enough to show a traceback's last line.
LINES_KEPT = 5
LINE_CHARS = 300
# How long a failed start waits for the rest of the server's stderr (it has exited: the
# pipe's end comes at once, unless a child of the server still holds it open).
DRAIN_SECONDS = 1.0


class StartFailed(Exception):
    """A stdio server that ended before answering, with the last lines of its stderr."""


class StderrTail:
    """The pipe a stdio server writes its stderr into, and the thread that reads it."""

    def __init__(self, server_id: str, secrets: Sequence[str] = ()) -> None:
        self.server_id = server_id
        # Masked out of every line before it is logged or kept: a server may print the
        # token its `env` gave it (`McpServerSpec.secrets`, longest first).
        self._secrets = list(secrets)
        self.lines: deque[str] = deque(maxlen=LINES_KEPT)
        read_fd, write_fd = os.pipe()
        # The server's end: handed to the spawn, then closed here (`spawned`).
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._ended = threading.Event()
        threading.Thread(target=self._pump, name=f"mcp-stderr-{server_id}", daemon=True).start()

    def _pump(self) -> None:
        try:
            for raw in self._reader:  # ends when every writer has closed: the server's exit
                line = self._masked(raw.decode("utf-8", "replace").rstrip())
                if line:
                    self.lines.append(line[:LINE_CHARS])
                    log.info("MCP server %s stderr: %s", self.server_id, line)
        finally:
            self._reader.close()
            self._ended.set()

    def _masked(self, line: str) -> str:
        for secret in self._secrets:
            line = line.replace(secret, "***")
        return line

    def spawned(self) -> None:
        """The server holds its own copy of the pipe now; ours would keep it open for ever."""
        if not self.writer.closed:
            self.writer.close()

    async def explained(self, exc: Exception) -> Exception:
        """`exc`, or a StartFailed naming it and the server's last stderr lines."""
        self.spawned()
        await asyncio.to_thread(self._ended.wait, DRAIN_SECONDS)
        if not self.lines:
            return exc
        said = " | ".join(self.lines)
        return StartFailed(f"{describe_error(exc)}; the server's stderr ended with: {said}")
