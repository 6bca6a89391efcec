"""One logging setup for every process (API, worker, `trellis dev`, setup): level, text or
JSON lines, the run a line is about, uvicorn's access log in the same format, and no
secret in any line."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace

from activities.executors.stdout_noise import condense_stdout_noise
from activities.executors.url_mask import MASK
from activities.run_log import FIELDS, current_run_fields
from activities.secret_names import is_credential_name
from activities.secret_text import scrub_request_path, scrub_secrets
from temporal_workflows.contracts import WORKFLOW_TYPE

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


# Libraries whose INFO lines are per request: kept to WARNING and above.
CHATTY_LOGGERS = (
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "mcp.client.streamable_http",
    "aiosqlite",
    # Logs every agent's whole card, in every process, at each catalog refresh (60 s).
    "a2a.client.card_resolver",
)
# Extras that are only for a terminal: uvicorn's `color_message` is its message with ANSI
# colour codes.
_TERMINAL_ONLY = frozenset({"color_message"})


def _message(record: logging.LogRecord) -> str:
    """The record's message; an access line's with its path masked before it is formatted."""
    args = record.args
    if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
        client, method, path, version, status = args
        try:
            return str(record.msg) % (
                client,
                method,
                scrub_request_path(str(path)),
                version,
                status,
            )
        except (TypeError, ValueError):
            pass  # not uvicorn's access line after all: the formatter's scrub still applies
    return record.getMessage()


def run_context(record: logging.LogRecord) -> dict[str, str]:
    """The run, workflow definition and node a record is about, where known."""
    found = current_run_fields()
    # Temporal's activity and workflow loggers: a run's workflow id is our run id (a
    # schedule's trigger workflow, `sched-…-run-<time>`, names no run).
    temporal = getattr(record, "temporal_activity", None) or getattr(
        record, "temporal_workflow", None
    )
    if (
        isinstance(temporal, dict)
        and temporal.get("workflow_id")
        and temporal.get("workflow_type") == WORKFLOW_TYPE
    ):
        found.setdefault("run_id", str(temporal["workflow_id"]))
    for name in FIELDS:
        value = getattr(record, name, None)
        if value:
            found[name] = str(value)
    return found


# What Temporal's own lines say of their activity or workflow, kept as fields (the rest
# of its details, namespace and run ids, say nothing an operator looks for).
TEMPORAL_FIELDS = ("activity_type", "activity_id", "attempt", "workflow_type")


def temporal_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The activity or workflow a line of Temporal's SDK is about (its type, attempt)."""
    details = getattr(record, "temporal_activity", None) or getattr(
        record, "temporal_workflow", None
    )
    if not isinstance(details, dict):
        return {}
    return {k: details[k] for k in TEMPORAL_FIELDS if details.get(k) is not None}


def trace_fields(full: bool = True) -> dict[str, str]:
    """The current span's trace id (and span id, when `full`), while tracing; else nothing."""
    span = trace.get_current_span().get_span_context()
    if not span.is_valid:
        return {}
    found = {"trace_id": format(span.trace_id, "032x")}
    if full:
        found["span_id"] = format(span.span_id, "016x")
    return found


def _access(record: logging.LogRecord) -> dict[str, Any]:
    """uvicorn's access-log arguments as fields: client, method, path, status."""
    args = record.args
    if record.name != "uvicorn.access" or not isinstance(args, tuple) or len(args) != 5:
        return {}
    client, method, path, _version, status = args
    return {
        "client": client,
        "method": method,
        "path": scrub_request_path(str(path)),
        "status": status,
    }


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message key=value…` — for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        line = f"{stamp}Z {record.levelname:<7} {record.name}: {_message(record)}"
        context = {**run_context(record), **trace_fields(full=False)}
        if context:
            line += " " + " ".join(f"{k}={v}" for k, v in context.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return scrub_secrets(line)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the run fields, extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
            **run_context(record),
            **trace_fields(),
            **_access(record),
            **temporal_fields(record),
        }
        for key, value in vars(record).items():
            if (
                key not in _STANDARD
                and key not in entry
                and key not in _TERMINAL_ONLY
                # Temporal's details (above) and its private marks (an error's identifier)
                and not key.startswith(("temporal_", "__"))
            ):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(_masked(entry), separators=(",", ":"))


def _masked(value: Any) -> Any:
    """`value` with its secrets masked before it is encoded: the encoded line is never
    edited, so it stays one JSON object (a mask applied to it broke `token=\"\"`'s
    escaped quotes). Strings are masked as text is; a value under a credential's name
    (`"api_key": …`, at any depth) is replaced whole; what JSON cannot hold is its text."""
    if isinstance(value, str):
        return scrub_secrets(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {
            str(k): MASK if v is not None and is_credential_name(str(k)) else _masked(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_masked(v) for v in value]
    return scrub_secrets(str(value))


def configure_logging(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Install one handler on the root logger; every library logger goes through it."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's loggers keep no handlers of their own: their lines reach ours.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # Chatty at INFO, and not about runs (httpx2 and httpcore2: the `mcp` SDK's client,
    # which logs a line per request: one per MCP call).
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    # A stdio server's stray stdout line: one WARNING naming the server, not a traceback.
    condense_stdout_noise()
    _temporal_fields_on_extra()


def json_lines() -> bool:
    """True when the root logger writes JSON lines (`TRELLIS_LOG_FORMAT=json`)."""
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)


def _temporal_fields_on_extra() -> None:
    """Temporal's loggers: workflow and activity details as fields, not appended text."""
    from temporalio import activity, workflow

    activity.logger.activity_info_on_message = False
    activity.logger.activity_info_on_extra = True
    workflow.logger.workflow_info_on_message = False
    workflow.logger.workflow_info_on_extra = True
