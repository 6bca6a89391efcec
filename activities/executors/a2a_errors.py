"""What an A2A agent's failed request says, as a step's error and a log line keep it.

The SDK quotes httpx's message for an HTTP error status, whose second sentence ("For more
information check: https://developer.mozilla.org/…") explains the status code in general
and ended up in every run's `errorSummary` and log line: it is left out. A 401 or 403 is
the agent refusing the credentials it was sent, so the message says where they come from
(as the MCP side names a refused handshake's status).
"""

from __future__ import annotations

import re

import httpx
from a2a.client.errors import AgentCardResolutionError

from activities.executors.base import describe_error

_BOILERPLATE = re.compile(r"\s*For more information check: https://developer\.mozilla\.org/\S*")
REFUSED_STATUSES = frozenset({401, 403})
REFUSED_HINT = " (check the catalog entry's headers: they are sent to its url's origin only)"


def describe_a2a_error(exc: BaseException) -> str:
    """`describe_error(exc)` without httpx's boilerplate, with a hint for a 401 or 403."""
    text = _BOILERPLATE.sub("", describe_error(exc))
    return text + REFUSED_HINT if http_status(exc) in REFUSED_STATUSES else text


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an agent answered with, found along the error's causes; else None."""
    seen: BaseException | None = exc
    for _ in range(5):  # the SDK wraps httpx's error once or twice
        while isinstance(seen, BaseExceptionGroup) and seen.exceptions:
            seen = seen.exceptions[0]
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        if isinstance(seen, AgentCardResolutionError) and seen.status_code is not None:
            return seen.status_code
        if seen is None:
            return None
        seen = seen.__cause__ or seen.__context__
    return None
