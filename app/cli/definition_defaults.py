"""A definition file is the whole definition: what it leaves out is what a create leaves
out. The API's PUT is partial (a field left out keeps its value), so `workflows apply`
sends each left-out field as its create-time default, read from the API's own model."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from temporal_workflows.definition import WorkflowSpec


def left_out(definition: dict[str, Any]) -> dict[str, Any]:
    """Each definition field the file gives neither by name nor by alias, as the API's
    create would take it: its default (`description: null` clears one), or null for a
    required one (`name`, `nodes`), which the API refuses as a create refuses its absence."""
    missing: dict[str, Any] = {}
    for name, field in WorkflowSpec.model_fields.items():
        alias = field.alias or name
        if name in definition or alias in definition:
            continue
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        missing[alias] = TypeAdapter(Any).dump_python(default, mode="json", by_alias=True)
    return missing
