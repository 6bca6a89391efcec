"""Which run a log line is about: `run_id`, `workflow_id`, `node_id`, carried by a context
variable through everything a step's activity calls, or given per line as `extra=`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

FIELDS = ("run_id", "workflow_id", "node_id")
_current: ContextVar[dict[str, str] | None] = ContextVar("trellis_run_log", default=None)


def run_fields(
    run_id: str, workflow_id: str | None = None, node_id: str | None = None
) -> dict[str, Any]:
    """`extra=` for a log line about a run (fields left out when unknown)."""
    fields = {"run_id": run_id, "workflow_id": workflow_id, "node_id": node_id}
    return {k: v for k, v in fields.items() if v}


@contextmanager
def about_run(
    run_id: str, workflow_id: str | None = None, node_id: str | None = None
) -> Iterator[None]:
    """Every line logged inside is about this run (and node)."""
    token = _current.set(run_fields(run_id, workflow_id, node_id))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def about_workflow(workflow_id: str) -> Iterator[None]:
    """Every line logged inside is about this workflow definition (no run yet, or none)."""
    token = _current.set({"workflow_id": workflow_id})
    try:
        yield
    finally:
        _current.reset(token)


def current_run_fields() -> dict[str, str]:
    """The run fields of the enclosing `about_run`, if any."""
    return dict(_current.get() or {})
