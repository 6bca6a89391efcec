"""A stdio MCP server's stdout line that is not JSON-RPC (a banner, a debug print): the MCP
SDK logs each as an ERROR with a dozen lines of pydantic traceback quoting it, in every
process spawning the server, naming no server. Condensed to one WARNING line that names
the server and quotes the line, masked and cut short (the SDK skips the line and goes on).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from activities.secret_text import scrub_secrets

# The SDK's logger and its message for the line it could not parse (mcp/client/stdio.py).
STDIO_LOGGER = "mcp.client.stdio"
_PARSE_FAILED = "Failed to parse JSONRPC message from server"

# Characters of the line kept, as of a stderr line (stderr_tail.py, which this module does
# not import: every process's logging setup imports this one).
LINE_CHARS = 300

# The stdio server a session's task serves: the SDK's stdout reader runs in a task
# started from it, so it sees the id (sessions.py sets it).
serving_server: ContextVar[str | None] = ContextVar("trellis_mcp_stdio_server", default=None)


class StdoutNoise(logging.Filter):
    """Rewrites the SDK's "Failed to parse" record into one WARNING line; leaves the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _PARSE_FAILED or not record.exc_info:
            return True
        line = scrub_secrets(_line_of(record.exc_info[1]))
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + "…"
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.msg = "MCP server %s wrote a line to stdout that is not JSON-RPC (skipped): %s"
        record.args = (serving_server.get() or "(unknown)", line)
        record.exc_info = record.exc_text = None
        return True


def _line_of(exc: BaseException | None) -> str:
    """The line the SDK could not parse: pydantic's error holds it whole (its text cuts it)."""
    errors = getattr(exc, "errors", None)
    try:
        found = errors()[0].get("input") if callable(errors) else None
    except Exception:  # not pydantic's error after all
        found = None
    if isinstance(found, str | bytes):
        text = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
    else:
        text = str(exc)
    return " ".join(text.split())


def condense_stdout_noise() -> None:
    """Install the filter on the SDK's stdio logger (once, however often logging is set up)."""
    logger = logging.getLogger(STDIO_LOGGER)
    if not any(isinstance(f, StdoutNoise) for f in logger.filters):
        logger.addFilter(StdoutNoise())
