"""Domain errors and the one JSON error body every endpoint answers with.

Shape: `{"error": {"code": "...", "message": "...", "details": [{"path", "message"}]}}`.
Every exception is mapped to it here, in one place; routes and services only raise.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from temporalio.service import RPCError, RPCStatusCode

from activities.run_start import RunStartFailed, WorkflowDisabled
from activities.store.base import DuplicateNameError, StoreError
from temporal_workflows.validation import DefinitionError

log = logging.getLogger(__name__)

Detail = dict[str, Any]


class ApiError(Exception):
    """An error with a status, a stable code and a human message."""

    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, details: list[Detail] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class InvalidRequest(ApiError):
    status_code = 400
    code = "invalid_request"


class NotFound(ApiError):
    status_code = 404
    code = "resource_not_found"


class Conflict(ApiError):
    status_code = 409
    code = "conflict"


class DuplicateEntry(ApiError):
    status_code = 409
    code = "duplicate_entry"


class ServiceUnavailable(ApiError):
    status_code = 503
    code = "service_unavailable"


# Codes for HTTP errors raised by the framework itself (routing, body limit).
_HTTP_CODES = {
    400: "invalid_request",
    404: "resource_not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    503: "service_unavailable",
}


def error_body(code: str, message: str, details: list[Detail] | None = None) -> dict[str, Any]:
    """The error document, the same for every status."""
    return {"error": {"code": code, "message": message, "details": details or []}}


def error_response(
    status: int, code: str, message: str, details: list[Detail] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status)


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "nodes", 0, "name")` → `nodes[0].name` (the request part is dropped)."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        where = parts.pop(0)
        if not parts:
            return str(where)
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _validation_details(exc: RequestValidationError) -> tuple[str, list[Detail]]:
    details: list[Detail] = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            pos = err["loc"][-1]
            reason = (err.get("ctx") or {}).get("error", "invalid JSON")
            return f"Malformed JSON body at position {pos}: {reason}", [
                {"path": "body", "message": f"{reason} (position {pos})"}
            ]
        details.append({"path": field_path(err["loc"]), "message": err["msg"]})
    summary = "; ".join(f"{d['path']}: {d['message']}" for d in details)
    return f"Invalid request: {summary}", details


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status_code, exc.code, exc.message, exc.details)


async def _request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    message, details = _validation_details(exc)
    return error_response(400, "invalid_request", message, details)


async def _definition_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DefinitionError)
    details = [{"path": p.path, "message": p.message} for p in exc.problems]
    return error_response(400, "invalid_request", f"Invalid workflow definition: {exc}", details)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    code = _HTTP_CODES.get(status, "invalid_request" if status < 500 else "internal_error")
    if status == 404:
        message = f"No resource at {request.url.path}"
    elif status == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    return JSONResponse(
        error_body(code, message), status_code=status, headers=getattr(exc, "headers", None)
    )


async def _duplicate_name(_: Request, exc: Exception) -> JSONResponse:
    return error_response(409, "duplicate_entry", str(exc) or "A workflow with this name exists")


async def _store_error(_: Request, exc: Exception) -> JSONResponse:
    log.exception("store operation failed", exc_info=exc)
    return error_response(500, "database_error", "Database operation failed")


async def _workflow_disabled(_: Request, exc: Exception) -> JSONResponse:
    return error_response(400, "invalid_request", str(exc))


async def _run_start_failed(_: Request, exc: Exception) -> JSONResponse:
    # The run is marked failed; a 503 tells the client Temporal, not its request, was at fault.
    return error_response(503, "service_unavailable", str(exc))


async def _rpc_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RPCError)
    if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return error_response(503, "service_unavailable", f"Temporal is unreachable: {exc}")
    log.exception("Temporal call failed", exc_info=exc)
    return error_response(500, "internal_error", "Internal server error")


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    # A 500 is always a bug: log it with its traceback, show the client nothing internal.
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "internal_error", "Internal server error")


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception to the one error body."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(DefinitionError, _definition_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DuplicateNameError, _duplicate_name)
    app.add_exception_handler(StoreError, _store_error)
    app.add_exception_handler(WorkflowDisabled, _workflow_disabled)
    app.add_exception_handler(RunStartFailed, _run_start_failed)
    app.add_exception_handler(RPCError, _rpc_error)
    app.add_exception_handler(Exception, _unexpected)
