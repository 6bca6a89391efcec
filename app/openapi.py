"""The OpenAPI document tells the truth: every error a route can answer with, in the one
error body; stable operation ids (the route's function name, camelCase); no 422, which
this API never sends (request validation answers 400).

Which errors a route documents is worked out from what it is, in one place:

- 400 `invalid_request`: it takes parameters or a body (or says so: `errors(400)`);
- 401 / 403: it is under `/api/v1` (a missing or bad token; a missing scope or ACL bit);
- 404 `resource_not_found`: its path names a resource;
- 413 `payload_too_large`: it takes a body (`TRELLIS_MAX_BODY_BYTES`);
- 503 `service_unavailable`: it needs Temporal (depends on the Temporal client or link);
- 503 `database_error`: it is under `/api/v1` and reads or writes the store (depends on
  it): the store cannot be reached for now (docs/api.md, Errors);
- 500 `database_error`: the same routes: the store failed the operation (a bug or a
  damaged store, never a passing outage);
- anything else a route declares itself with `responses=errors(409, ...)`.

In `dev` mode no token is needed, and the document says so: the bearer scheme stays (so
/docs can send one), as an alternative to none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from pydantic import Field

from temporal_workflows.base import CamelModel

API_PREFIX = "/api/v1"


class ErrorDetail(CamelModel):
    path: str = Field(examples=["nodes[0].executorKey"])
    message: str


class ErrorInfo(CamelModel):
    code: str = Field(
        examples=["invalid_request"],
        description="Stable: invalid_request, authentication_required, forbidden, "
        "resource_not_found, method_not_allowed, conflict, duplicate_entry, "
        "precondition_failed, "
        "payload_too_large, response_too_large, service_unavailable, internal_error, "
        "database_error",
    )
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorBody(CamelModel):
    """The one error document every status other than 2xx carries."""

    error: ErrorInfo


DESCRIPTIONS = {
    400: "invalid_request: a malformed id, parameter or body, or one the rules refuse",
    401: "authentication_required: no token, or one that is malformed, expired or not ours",
    403: "forbidden: the token lacks the scope, or the caller the permission, this needs",
    404: "resource_not_found: nothing with that id (or nothing the caller may see)",
    409: "conflict: the resource's state does not allow this now",
    412: "precondition_failed: the If-Match tag is not the resource's current ETag (it "
    "changed since it was read, or the tag is malformed); nothing was changed",
    413: "payload_too_large: the body is larger than TRELLIS_MAX_BODY_BYTES",
    503: "service_unavailable: Temporal cannot be reached right now",
}
STORE_UNAVAILABLE = "database_error: the document store cannot be reached for now; retry shortly"
STORE_FAILED = (
    "database_error: the document store failed the operation, not for want of a connection"
    " (logged with its traceback)"
)


def errors(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: these error statuses with the error body.

    A keyword `s409="…"` gives a status its own description.
    """
    return {
        status: {
            "model": ErrorBody,
            "description": descriptions.get(f"s{status}", DESCRIPTIONS[status]),
        }
        for status in statuses
    }


def install_openapi(
    app: FastAPI,
    needs_temporal: Callable[..., Any],
    needs_store: Callable[..., Any],
    token_optional: bool = False,
) -> None:
    """Serve the truthful document at /openapi.json (built once, on first request).

    `needs_temporal` and `needs_store` are the dependencies whose presence means a route
    may answer 503 (`service_unavailable`, `database_error`); `token_optional` (dev mode)
    documents every route as callable without a token.
    """

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app, needs_temporal, needs_store, token_optional)
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]


def _document(
    app: FastAPI,
    needs_temporal: Callable[..., Any],
    needs_store: Callable[..., Any],
    token_optional: bool,
) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.update(_error_schemas())
    for route in _api_routes(app):
        if not route.include_in_schema:
            continue
        for method in sorted((route.methods or set()) - {"HEAD"}):
            operation = schema["paths"][route.path_format][method.lower()]
            operation["operationId"] = _camel(route.name or "")
            if token_optional and operation.get("security"):
                operation["security"] = [*operation["security"], {}]
            responses = operation["responses"]
            responses.pop("422", None)
            for status in _statuses(route, operation, needs_temporal):
                responses.setdefault(str(status), _error_response(DESCRIPTIONS[status]))
            if (route.path or "").startswith(API_PREFIX) and _depends_on(route, needs_store):
                _add_store_errors(responses)
            for response in responses.values():
                _point_at_error_body(response)
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    _add_links(schema)
    return schema


# Where the ids in paths come from: (operationId, status, expression) of the responses
# that create them. Links let a client (and Schemathesis) go from one to the next.
_PRODUCERS: dict[str, list[tuple[str, str, str]]] = {
    "workflow_id": [("createWorkflow", "201", "$response.body#/id")],
    "version": [("createWorkflow", "201", "$response.body#/version")],
    "run_id": [
        ("triggerRun", "202", "$response.body#/runId"),
        ("retryRun", "200", "$response.body#/runId"),
        ("replayRun", "202", "$response.body#/runId"),
    ],
    "schedule_id": [("createSchedule", "201", "$response.body#/id")],
}


def _add_links(schema: dict[str, Any]) -> None:
    """OpenAPI links from each creating response to every operation that takes its id."""
    operations = {
        op["operationId"]: (path, op)
        for path, methods in schema["paths"].items()
        for op in methods.values()
    }
    made: dict[tuple[str, str], dict[str, str]] = {}  # (producer, status) -> name -> expression
    for name, producers in _PRODUCERS.items():
        for producer, status, expression in producers:
            made.setdefault((producer, status), {})[name] = expression
    for target, (_path, op) in operations.items():
        names = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        for (producer, status), produced in made.items():
            source_path, source = operations[producer]
            if not names & set(produced):
                continue
            # Ids the producer does not create come from the request that called it.
            given = {n: f"$request.path.{n}" for n in names if f"{{{n}}}" in source_path}
            parameters = {n: produced.get(n) or given.get(n) for n in sorted(names)}
            response = source["responses"].get(status)
            if response is None or None in parameters.values():
                continue  # the producer cannot supply every id the target needs
            response.setdefault("links", {})[target] = {
                "operationId": target,
                "parameters": parameters,
            }


def _api_routes(app: FastAPI) -> Iterator[RouteContext]:
    """Every API route as served (with its router's prefix), included routers walked."""
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute):
            yield context


def _statuses(
    route: RouteContext, operation: dict[str, Any], needs_temporal: Callable[..., Any]
) -> list[int]:
    statuses = []
    parameters = operation.get("parameters", [])
    has_body = "requestBody" in operation
    if parameters or has_body:
        statuses.append(400)
    if (route.path or "").startswith(API_PREFIX):
        statuses += [401, 403]
    if any(p["in"] == "path" for p in parameters):
        statuses.append(404)
    if has_body:
        statuses.append(413)
    if _depends_on(route, needs_temporal):
        statuses.append(503)
    return statuses


def _depends_on(route: RouteContext, call: Callable[..., Any]) -> bool:
    return any(d.call is call for d in _dependencies(route.dependant))


def _add_store_errors(responses: dict[str, Any]) -> None:
    """500 and 503 `database_error`, beside any other 500 or 503 the route documents."""
    for status, description in (("500", STORE_FAILED), ("503", STORE_UNAVAILABLE)):
        response = responses.setdefault(status, _error_response(description))
        if "database_error" not in response.get("description", ""):
            response["description"] = f"{response.get('description', '')}; {description}"


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for sub in dependant.dependencies:
        yield sub
        yield from _dependencies(sub)


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }


def _point_at_error_body(response: dict[str, Any]) -> None:
    # `errors()` routes name ErrorBody by model; keep one component name for it.
    content = response.get("content", {}).get("application/json", {})
    ref = content.get("schema", {}).get("$ref", "")
    if ref.endswith(("/ErrorBody", "/app__openapi__ErrorBody")):
        content["schema"] = {"$ref": "#/components/schemas/ErrorBody"}


def _error_schemas() -> dict[str, Any]:
    generated = ErrorBody.model_json_schema(
        by_alias=True, ref_template="#/components/schemas/{model}"
    )
    definitions = generated.pop("$defs", {})
    return {"ErrorBody": generated, **definitions}


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route serves at `path` (the `Allow` header of a 405); HEAD with
    GET (app/head.py)."""
    methods: set[str] = set()
    for route in _api_routes(app):
        if route.path_regex.match(path):
            methods |= route.methods or set()
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
