"""A definition file is the whole definition: what it leaves out is what a create leaves
out. The API's PUT is partial (a field left out keeps its value), so `workflows apply`
sends each left-out field as its create-time default, read from the API's own model."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from temporal_workflows.definition import WorkflowSpec


def left_out(definition: dict[str, Any]) -> dict[str, Any]:
    """Each optional definition field the file gives neither by name nor by alias, as the
    API's create would take it: its default (`description: null` clears one)."""
    missing: dict[str, Any] = {}
    for name, field in WorkflowSpec.model_fields.items():
        alias = field.alias or name
        if name in definition or alias in definition or field.is_required():
            continue
        default = field.get_default(call_default_factory=True)
        missing[alias] = TypeAdapter(Any).dump_python(default, mode="json", by_alias=True)
    return missing


def required_left_out(definition: dict[str, Any]) -> list[str]:
    """The required fields (`name`, `nodes`) the file gives by neither name: the file is
    refused, as a create refuses their absence (sent as null, the API's answer told the
    user to leave out what they had left out)."""
    return [
        field.alias or name
        for name, field in WorkflowSpec.model_fields.items()
        if field.is_required()
        and name not in definition
        and (field.alias or name) not in definition
    ]
