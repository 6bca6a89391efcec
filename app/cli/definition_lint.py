"""Keys of a definition file that no field of a definition names: typos and legacy names.

The API ignores unknown fields, as the contract asks (its legacy `requireApproval`
included), so a misspelt key saves and runs as if it were not there — a gate written as
`requiresApproval` simply never opens. `trellis workflows apply` warns about each one.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from temporal_workflows.definition import WorkflowSpec

# Read beside the definition: `id` (by the CLI: which workflow to update), `enabled`; and
# what a workflow read carries that no one sets (`workflows show --json` applied as it is,
# a workflow copied between platforms), taken as given, not as a misspelt field.
# What `workflows show --json` prints beside the definition (with `--version N`: the
# version's `workflowId` and `createdBy`).
TOP_LEVEL_EXTRAS = frozenset(
    {"id", "enabled", "version", "createdAt", "updatedAt", "workflowId", "createdBy"}
)


def unknown_fields(definition: dict[str, Any]) -> list[str]:
    """The path of every key no field names (`nodes[1].requiresApproval`), in order."""
    return _walk(WorkflowSpec, definition, "", TOP_LEVEL_EXTRAS)


def _walk(
    model: type[BaseModel], value: dict[str, Any], path: str, extras: frozenset[str] = frozenset()
) -> list[str]:
    # The API accepts a field by its name or its camelCase alias (CamelModel).
    fields = {}
    for name, field in model.model_fields.items():
        fields[name] = fields[field.alias or name] = field.annotation
    found: list[str] = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key in fields:
            found += _inside(fields[key], item, where)
        elif key not in extras:
            found.append(where)
    return found


def _inside(annotation: Any, value: Any, path: str) -> list[str]:
    """The unknown keys within `value`, a value of a field of type `annotation`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _inside(typing.get_args(annotation)[0], value, path)
    if origin in (typing.Union, types.UnionType):
        return [k for arg in typing.get_args(annotation) for k in _inside(arg, value, path)]
    if origin is list and isinstance(value, list):
        [item_type] = typing.get_args(annotation)
        return [k for i, item in enumerate(value) for k in _inside(item_type, item, f"{path}[{i}]")]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _walk(annotation, value, path) if isinstance(value, dict) else []
    return []  # a scalar, or free-form (a step's `config`)
