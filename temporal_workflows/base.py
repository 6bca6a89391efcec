"""The one camelCase model base shared by the API, Temporal payloads and stored documents."""

from typing import Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# For an int field, after its constraints (`Annotated[int, Field(ge=1), INTEGRAL]`, in that
# order, so the constraints stay in the JSON Schema): JSON may write an integer as `3` or
# `3.0` (both integers to JSON Schema), also in strict models, which refuse `"3"` and `true`.
INTEGRAL = BeforeValidator(_integral)


class CamelModel(BaseModel):
    """camelCase on the wire, snake_case in Python; accepts both when loading."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
