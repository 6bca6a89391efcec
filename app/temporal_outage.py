"""Telling "Temporal is down" apart from everything else a call to it can raise.

Shared by the API (a 503, app/errors.py) and the worker's reconciler (a one-line
warning), so both agree on what an outage is; this module imports no web framework.
"""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

from app.redaction import describe

UNREACHABLE = frozenset({RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED})
# How the SDK's client reports a call that outran its own deadline (tonic's timeout layer):
# CANCELLED, not DEADLINE_EXCEEDED. Temporal too slow to answer, not a bug.
CLIENT_TIMEOUT = "Timeout expired"
# How a client that has not connected yet (lazy, or its first dial refused) reports the
# dial: a RuntimeError, not an RPCError.
CONNECT_FAILED = "Failed client connect"


def unreachable(exc: RPCError) -> bool:
    """Temporal did not answer: down, or too slow for the call's deadline."""
    return exc.status in UNREACHABLE or (
        exc.status == RPCStatusCode.CANCELLED and exc.message == CLIENT_TIMEOUT
    )


def outage_cause(exc: BaseException) -> str | None:
    """Why Temporal could not be reached, in one line; None when `exc` is anything else."""
    if isinstance(exc, RPCError) and unreachable(exc):
        return f"{exc.status.name}: {' '.join(exc.message.split())}"
    if isinstance(exc, RuntimeError) and str(exc).startswith(CONNECT_FAILED):
        return describe(exc)
    return None
