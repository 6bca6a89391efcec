"""Answering with one of two models (a union in the OpenAPI document), serialised by its own.

FastAPI serialises a route's return value through its response model; for a union that is
pydantic's union serializer, which first checks every field of the value against each
member in strict mode. For a run detail that cost more than the serialisation itself
(~2.5x the model's own `model_dump_json`). The route keeps the union as its documented
`response_model` and returns this instead.
"""

from __future__ import annotations

from fastapi import Response
from pydantic import BaseModel


def model_response(body: BaseModel) -> Response:
    """`body` as the JSON its model writes (camelCase: every API model serialises by alias)."""
    return Response(json_body(body), media_type="application/json")


def json_body(body: BaseModel) -> bytes:
    """The JSON `body`'s model writes (camelCase: every API model serialises by alias)."""
    return body.model_dump_json().encode()
