"""Optional body fields that may be left out but not sent as null: the model reads them as
`X | None` (None: not given), the OpenAPI document says `X` (null is refused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationInfo


def not_null(value: Any, info: ValidationInfo) -> Any:
    """A `mode="before"` field validator: an explicit null is a mistake."""
    if value is None:
        raise ValueError("must not be null (omit the field to leave it unset)")
    return value


def omittable(
    *fields: str, extra: dict[str, Any] | None = None
) -> Callable[[dict[str, Any]], None]:
    """`json_schema_extra` for a model: `fields` lose their null variant and their null
    default; `extra` is merged into the model's schema."""

    def adjust(schema: dict[str, Any]) -> None:
        for name in fields:
            prop = schema.get("properties", {}).get(name)
            if prop is None:
                continue
            variants = [v for v in prop.pop("anyOf", []) if v.get("type") != "null"]
            if len(variants) == 1:
                prop.update(variants[0])
            elif variants:
                prop["anyOf"] = variants
            if prop.get("default", 0) is None:
                del prop["default"]
        schema.update(extra or {})

    return adjust
