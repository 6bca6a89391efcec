"""Domain errors and the one JSON error body every endpoint answers with.

Shape: `{"error": {"code": "...", "message": "...", "details": [{"path", "message"}]}}`.
Every exception is mapped to it here, in one place; routes and services only raise.
Temporal's errors are mapped here too: a service lets them through, or (where the same
RPC status means different things) wraps them in `RunRefused` / `ScheduleRefused`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.run_start import RunStartFailed, WorkflowDisabled
from activities.store.base import DuplicateNameError, ReadTooLarge, StoreError, StoreUnavailable
from app.openapi import allowed_methods
from app.temporal_outage import unreachable
from temporal_workflows.contracts import CONFLICT_ERROR, INVALID_ERROR, NOT_FOUND_ERROR, PROBLEMS
from temporal_workflows.validation import MAX_DEPTH, DefinitionError

log = logging.getLogger(__name__)

Detail = dict[str, Any]


class ApiError(Exception):
    """An error with a status, a stable code and a human message."""

    status_code = 500
    code = "internal_error"

    def __init__(
        self,
        message: str,
        details: list[Detail] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        self.headers = headers


class NotAuthenticated(ApiError):
    """No valid bearer token; the message says what was wrong with it (never the token)."""

    status_code = 401
    code = "authentication_required"

    def __init__(self, message: str) -> None:
        # RFC 6750: a 401 names the scheme the client should use.
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="trellis"'})


class Forbidden(ApiError):
    status_code = 403
    code = "forbidden"


class InvalidRequest(ApiError):
    status_code = 400
    code = "invalid_request"


class ResponseTooLarge(ApiError):
    """The answer would carry more than TRELLIS_MAX_RESPONSE_BYTES of node runs."""

    status_code = 400
    code = "response_too_large"


class NotFound(ApiError):
    status_code = 404
    code = "resource_not_found"


class Conflict(ApiError):
    status_code = 409
    code = "conflict"


class PreconditionFailed(ApiError):
    """An `If-Match` that names no current tag: the resource changed since it was read."""

    status_code = 412
    code = "precondition_failed"


class DuplicateEntry(ApiError):
    status_code = 409
    code = "duplicate_entry"


class ServiceUnavailable(ApiError):
    status_code = 503
    code = "service_unavailable"


class DatabaseFailure(ApiError):
    status_code = 500
    code = "database_error"


class DatabaseUnavailable(ApiError):
    status_code = 503
    code = "database_error"


class RunRefused(Exception):
    """Temporal refused a call on a run's workflow (an update, a cancellation)."""

    def __init__(self, run_id: str, error: RPCError) -> None:
        super().__init__(error.message)
        self.run_id = run_id
        self.error = error


class ScheduleRefused(Exception):
    """Temporal refused a call on a schedule."""

    def __init__(self, error: RPCError, schedule_id: str = "") -> None:
        super().__init__(error.message)
        self.error = error
        self.schedule_id = schedule_id


class UpdateNotTaken(Exception):
    """No worker took a run's update before the API stopped waiting."""


# Codes for HTTP errors raised by the framework itself (routing, body limit).
_HTTP_CODES = {
    400: "invalid_request",
    401: "authentication_required",
    403: "forbidden",
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


# A path longer than this many parts is shown by its first and last parts and its depth:
# a tree nested past the validator's recursion limit would repeat `children[0]` hundreds
# of times in the message and in its detail.
PATH_PARTS_SHOWN = 16
PATH_HEAD_PARTS, PATH_TAIL_PARTS = 6, 2


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "nodes", 0, "name")` → `nodes[0].name` (the request part is dropped);
    a deep one compactly: `nodes[0].children[0].children[0] … children[0] (300 levels deep)`
    (levels: the list indices on the way, so a node tree's level)."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        where = parts.pop(0)
        if not parts:
            return str(where)
    if len(parts) <= PATH_PARTS_SHOWN:
        return _joined(parts)
    levels = sum(isinstance(part, int) for part in parts)
    head, tail = parts[:PATH_HEAD_PARTS], parts[-PATH_TAIL_PARTS:]
    return f"{_joined(head)} … {_joined(tail)} ({levels} levels deep)"


def _joined(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# pydantic's words before the message of a validator that raised ValueError or failed an
# assert ("Value error, must be an integer"): the message alone is the API's.
_VALIDATOR_PREFIXES = {"value_error": "Value error, ", "assertion_error": "Assertion failed, "}


def _validation_details(
    exc: RequestValidationError, content_type: str | None
) -> tuple[str, list[Detail]]:
    details: list[Detail] = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            pos = err["loc"][-1]
            reason = (err.get("ctx") or {}).get("error", "invalid JSON")
            return f"Malformed JSON body at position {pos}: {reason}", [
                {"path": "body", "message": f"{reason} (position {pos})"}
            ]
        # A validator's own message, without the words pydantic puts before it.
        message = err["msg"].removeprefix(_VALIDATOR_PREFIXES.get(err.get("type", ""), ""))
        if err["loc"] == ("body",) and isinstance(err.get("input"), bytes):
            # FastAPI parses a body as JSON only under a JSON Content-Type and hands the
            # model its bytes otherwise (curl -d sends a form's type).
            sent = f"as {content_type[:100]}" if content_type else "without a Content-Type"
            message = f"must be JSON sent with Content-Type: application/json (it was sent {sent})"
        elif err.get("type") == "extra_forbidden":
            message = "is not a field of this body (see the OpenAPI document)"
        elif err.get("type") == "recursion_depth_exceeded" and "nodes" in err["loc"]:
            # The validator's own words name no limit a user can act on.
            message = f"nested too deeply (a node tree may be at most {MAX_DEPTH} levels deep)"
        details.append({"path": field_path(err["loc"]), "message": message})
    summary = "; ".join(f"{d['path']}: {d['message']}" for d in details)
    return f"Invalid request: {summary}", details


def _unparsed_body(exc: StarletteHTTPException) -> tuple[str, list[Detail]] | None:
    """The malformed-JSON answer for a body FastAPI could not parse for a reason other than
    its syntax (it says only "There was an error parsing the body"); None for any other error.

    Python's parser refuses nesting past its recursion limit and integers of more than
    `sys.get_int_max_str_digits()` digits, and bytes that are not UTF-8.
    """
    cause = exc.__cause__
    if exc.status_code != 400:
        return None
    if isinstance(cause, UnicodeDecodeError):
        reason = f"not UTF-8 ({cause.reason})"
        return f"Malformed JSON body at position {cause.start}: {reason}", [
            {"path": "body", "message": f"{reason} (position {cause.start})"}
        ]
    if isinstance(cause, RecursionError):
        reason = "nested too deeply to parse (request data may nest at most 100 levels)"
    elif isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        reason = f"an integer has more than {sys.get_int_max_str_digits()} digits"
    else:
        return None
    return f"Malformed JSON body: {reason}", [{"path": "body", "message": reason}]


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    response = error_response(exc.status_code, exc.code, exc.message, exc.details)
    response.headers.update(exc.headers or {})
    return response


def _request_validation(
    caller_first: Callable[[Request], Awaitable[None]] | None,
) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    """400 for a request FastAPI refused; `caller_first` may refuse it before that (an
    ApiError: who calls and the route's scope come first, as for any other request)."""

    async def handler(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        if caller_first is not None:
            try:
                await caller_first(request)
            except ApiError as refused:
                return await _api_error(request, refused)
        message, details = _validation_details(exc, request.headers.get("content-type"))
        return error_response(400, "invalid_request", message, details)

    return handler


async def _definition_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DefinitionError)
    details = [{"path": p.path, "message": p.message} for p in exc.problems]
    return error_response(400, "invalid_request", f"Invalid workflow definition: {exc}", details)


def _http_error(
    caller_first: Callable[[Request], Awaitable[None]] | None,
) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    """The error body for an HTTP error of the framework (routing, body parsing, limit);
    a body it could not parse is answered as malformed JSON, after `caller_first`."""

    async def handler(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        unparsed = _unparsed_body(exc)
        # A body cut off at the limit as it streamed (app/body_limit.py, no declared
        # length) was read as the route's body: who calls comes first there too.
        cut_off = exc.status_code == 413
        if unparsed is None and not cut_off:
            return _framework_error(request, exc)
        if caller_first is not None:
            try:
                await caller_first(request)
            except ApiError as refused:
                return await _api_error(request, refused)
        if unparsed is None:
            return _framework_error(request, exc)
        return error_response(400, "invalid_request", *unparsed)

    return handler


def _framework_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    status = exc.status_code
    code = _HTTP_CODES.get(status, "invalid_request" if status < 500 else "internal_error")
    headers = getattr(exc, "headers", None)
    if status == 404:
        message = f"No resource at {request.url.path}"
    elif status == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}"
        # Starlette names only the first route matching the path; a path served by
        # several routes (GET and PUT on one id) allows all of their methods.
        headers = {"Allow": ", ".join(allowed_methods(request.app, request.url.path))}
    else:
        message = str(exc.detail)
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


# The workflow's own error types (raised by its update handlers and validators).
WORKFLOW_ERRORS: dict[str, type[ApiError]] = {
    NOT_FOUND_ERROR: NotFound,
    INVALID_ERROR: InvalidRequest,
    CONFLICT_ERROR: Conflict,
}
INTERNAL = "Internal server error"


def _from_rpc(exc: RPCError) -> ApiError:
    if unreachable(exc):
        return ServiceUnavailable(f"Temporal is unreachable: {exc.message}")
    return ApiError(INTERNAL)


def _from_run_refused(exc: RunRefused) -> ApiError:
    # The run's workflow is gone from Temporal: closed (and perhaps past retention).
    if exc.error.status == RPCStatusCode.NOT_FOUND:
        return Conflict(f"Run {exc.run_id} is no longer running ({exc.error.message})")
    if unreachable(exc.error):
        return _from_rpc(exc.error)
    if exc.error.status == RPCStatusCode.FAILED_PRECONDITION:
        # Temporal takes no update while the run's workflow task keeps failing (a bug, a
        # worker deployed with incompatible code): nothing applied; a fixed worker runs it.
        return ServiceUnavailable(
            f"Run {exc.run_id} cannot take this now: its workflow task is failing in the "
            f"worker (the worker's log says why), and nothing was applied ({exc.error.message})"
        )
    return ApiError(f"Temporal refused the request: {exc.error.message}")


def _from_schedule_refused(exc: ScheduleRefused) -> ApiError:
    if exc.error.status == RPCStatusCode.NOT_FOUND:
        # Temporal's own words say how it looked ("workflow execution already completed").
        return NotFound(f"Schedule not found: {exc.schedule_id or exc.error.message}")
    if exc.error.status == RPCStatusCode.INVALID_ARGUMENT:
        return InvalidRequest(f"Invalid schedule: {exc.error.message}")
    return _from_rpc(exc.error)


# Temporal's failure for an update it accepted whose run ended before the update did.
ENDED_FIRST = "AcceptedUpdateCompletedWorkflow"


def _problems(details: Sequence[Any]) -> list[Detail]:
    """A refused decision's problems (`details` of the workflow's error), as the API's."""
    for detail in details:
        if isinstance(detail, dict) and isinstance(detail.get(PROBLEMS), list):
            return [p for p in detail[PROBLEMS] if isinstance(p, dict)]
    return []


def _from_update_failed(exc: WorkflowUpdateFailedError) -> ApiError:
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type in WORKFLOW_ERRORS:
        return WORKFLOW_ERRORS[cause.type](cause.message, _problems(cause.details))
    if isinstance(cause, ApplicationError) and cause.type == ENDED_FIRST:
        # A resume racing a cancel: the run ended first (it was a 500).
        return Conflict(f"The run ended before this could apply ({cause.message})")
    return ApiError(INTERNAL)


# Each domain or Temporal error type and the API error it becomes.
_MAPPED: dict[type[Exception], Callable[[Any], ApiError]] = {
    DuplicateNameError: lambda e: DuplicateEntry(str(e) or "A workflow with this name exists"),
    StoreError: lambda e: DatabaseFailure("Database operation failed"),
    ReadTooLarge: lambda e: ResponseTooLarge(
        f"This answer would carry more than {e.limit} bytes of node runs "
        "(TRELLIS_MAX_RESPONSE_BYTES): ask for less. A run detail or a page of runs with "
        "?nodeRuns=summary carries their counts; GET …/runs/{runId}/nodes?page=1&perPage=N "
        "pages through the node runs (a smaller perPage holds fewer)"
    ),
    # Unreachable for now: 503, so clients and load balancers retry.
    StoreUnavailable: lambda e: DatabaseUnavailable("Database unavailable; retry shortly"),
    WorkflowDisabled: lambda e: InvalidRequest(str(e)),
    # The run is marked failed; 503 says Temporal, not the request, was at fault.
    RunStartFailed: lambda e: ServiceUnavailable(str(e)),
    RunRefused: _from_run_refused,
    ScheduleRefused: _from_schedule_refused,
    WorkflowUpdateFailedError: _from_update_failed,
    UpdateNotTaken: lambda e: ServiceUnavailable(
        "No worker took the request in time; it may still be applied when one does"
    ),
    RPCError: _from_rpc,
}


def _mapped(
    convert: Callable[[Any], ApiError],
) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(_: Request, exc: Exception) -> JSONResponse:
        error = convert(exc)
        if error.status_code == 500:
            log.exception("request failed: %s", error.message, exc_info=exc)
        return error_response(error.status_code, error.code, error.message, error.details)

    return handler


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    # A 500 is always a bug: log it with its traceback, show the client nothing internal.
    log.exception("unhandled error", exc_info=exc)
    response = error_response(500, "internal_error", "Internal server error")
    # Starlette raises the error again after this answer and uvicorn then drops the
    # connection: said here, a client does not send its next request down it (reset).
    response.headers["Connection"] = "close"
    return response


def install_error_handlers(
    app: FastAPI, caller_first: Callable[[Request], Awaitable[None]] | None = None
) -> None:
    """Map every exception to the one error body; `caller_first` checks who calls before
    a request FastAPI refused is answered 400 (app/auth/guard.py)."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _request_validation(caller_first))
    app.add_exception_handler(DefinitionError, _definition_error)
    app.add_exception_handler(StarletteHTTPException, _http_error(caller_first))
    for exc_type, convert in _MAPPED.items():
        app.add_exception_handler(exc_type, _mapped(convert))
    app.add_exception_handler(Exception, _unexpected)
