"""The body of a run's trigger and its 202 (contract section 7; the lineage endpoints' 202
too): what a run is started with, the dependencies it resolves from a parent run, and the
answer that queued it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import ConfigDict, Field, JsonValue, model_validator

from activities.store.records import ResolvedDependency, RunRecord
from app.schemas.run_data import run_data
from temporal_workflows.base import CamelModel
from temporal_workflows.validation import NODE_ID_PATTERN

# An id in a request body, under the rule of path ids (docs/api.md, "Ids"): malformed is a
# 400 naming the field, before anything is looked up.
IdStr = Annotated[str, Field(pattern=NODE_ID_PATTERN.pattern)]


def _one_shape_per_resolution(schema: dict[str, Any]) -> None:
    """The entry as two shapes, one per `resolution` (`oneOf`, told apart by its `const`):
    a reuse names its `sourceNodeRunId` (a string, not null), a rerun names none.

    Not `if`/`then`: client generators ignore both and make every field optional, and a
    fuzzer reaches the `else` side only through `not`. No `discriminator` either: its
    mapping names component schemas, and one model per shape would change the 400s' paths.
    """
    properties = schema.pop("properties")
    required = schema.pop("required")
    source = properties["sourceNodeRunId"]["anyOf"][0]  # the id; the null variant goes
    shapes = (
        ("reuse_previous_output", source, [*required, "sourceNodeRunId"]),
        ("rerun", {"type": "null"}, required),
    )
    schema.pop("type")
    schema["oneOf"] = [
        {
            "type": "object",
            "title": resolution,
            "properties": {
                **properties,
                "resolution": {"type": "string", "const": resolution},
                "sourceNodeRunId": source_schema,
            },
            "required": shape_required,
        }
        for resolution, source_schema, shape_required in shapes
    ]


class DependencyRequest(ResolvedDependency):
    """One `resolvedDependencies` entry as a trigger sends it: ids under the path-id rule,
    and `sourceNodeRunId` given exactly when an output is reused (a rerun has none to
    point at; one sent was recorded as lineage, unchecked). Errors name the entry's field."""

    model_config = ConfigDict(json_schema_extra=_one_shape_per_resolution)

    node_id: IdStr
    source_node_run_id: IdStr | None = None

    @model_validator(mode="after")
    def _source_exactly_when_reused(self) -> Self:
        reused = self.resolution == "reuse_previous_output"
        if reused and self.source_node_run_id is None:
            raise ValueError(
                f"node {self.node_id!r} reuses a previous output and needs sourceNodeRunId"
            )
        if not reused and self.source_node_run_id is not None:
            raise ValueError(
                f"node {self.node_id!r} is rerun: sourceNodeRunId names the output a "
                "reuse_previous_output entry takes, and a rerun takes none"
            )
        return self


# The trigger sources of child runs (contract 8b, GET …/children).
CHILD_SOURCES = frozenset({"retry", "node_rerun", "replay"})
_CHILD_SOURCE_NAMES = list[JsonValue](sorted(CHILD_SOURCES))

# Every trigger field is optional, and many clients write an absent one as null: null
# means "not given" for each (as for parentRunId), under either name.
_OPTIONAL_FIELDS = {
    "triggerSource": "trigger_source",
    "initialInput": "initial_input",
    "parentRunId": "parent_run_id",
    "resolvedDependencies": "resolved_dependencies",
}
OPTIONAL_TRIGGER_NAMES = frozenset(_OPTIONAL_FIELDS) | frozenset(_OPTIONAL_FIELDS.values())


# The validators below, as far as JSON Schema says them (their messages are the API's;
# the document only refuses what they refuse). A null is a field left out.
_TRIGGER_RULES: dict[str, JsonValue] = {
    "examples": [{"initialInput": {"customerName": "Ada"}}],
    "allOf": [
        # Dependencies name outputs of a parent run: they need its id.
        {
            "if": {
                "required": ["resolvedDependencies"],
                "properties": {"resolvedDependencies": {"type": "array", "minItems": 1}},
            },
            "then": {
                "required": ["parentRunId"],
                "properties": {"parentRunId": {"type": "string"}},
            },
        },
        # A run with a parent is a retry ...
        {
            "if": {
                "required": ["parentRunId"],
                "properties": {"parentRunId": {"type": "string"}},
            },
            "then": {"properties": {"triggerSource": {"enum": ["retry", None]}}},
        },
        # ... and a child run's trigger source needs one.
        {
            "if": {
                "required": ["triggerSource"],
                "properties": {"triggerSource": {"enum": _CHILD_SOURCE_NAMES}},
            },
            "then": {
                "required": ["parentRunId"],
                "properties": {"parentRunId": {"type": "string"}},
            },
        },
    ],
}


def _trigger_schema(schema: dict[str, Any]) -> None:
    """The trigger's rules, and null beside each optional field's own type."""
    for name in _OPTIONAL_FIELDS:
        prop = schema["properties"][name]
        if "anyOf" not in prop:
            own = {
                k: prop.pop(k) for k in list(prop) if k not in ("title", "default", "description")
            }
            prop["anyOf"] = [own, {"type": "null"}]
    schema.update(_TRIGGER_RULES)


class RunCreate(CamelModel):
    model_config = ConfigDict(strict=True, json_schema_extra=_trigger_schema)

    trigger_source: str = Field(default="manual", min_length=1, max_length=64)
    initial_input: Annotated[dict[str, Any], run_data("initialInput")] = Field(default_factory=dict)
    parent_run_id: IdStr | None = None
    resolved_dependencies: list[DependencyRequest] = Field(
        default_factory=list,
        max_length=500,
        json_schema_extra={"uniqueItems": True},
        description="At most one entry per nodeId (checked by the API: JSON Schema's "
        "uniqueItems refuses only entries equal as a whole).",
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_left_out(cls, data: Any) -> Any:
        if isinstance(data, dict):
            left_out = OPTIONAL_TRIGGER_NAMES
            return {k: v for k, v in data.items() if v is not None or k not in left_out}
        return data

    @model_validator(mode="after")
    def _children_are_retries(self) -> RunCreate:
        """A run with a parent is a retry (contract 8b: a child's triggerSource is retry,
        node_rerun or replay, and the last two have their own endpoints); those three
        name a parent."""
        if self.parent_run_id is not None:
            if "trigger_source" not in self.model_fields_set:
                self.trigger_source = "retry"
            elif self.trigger_source != "retry":
                raise ValueError(
                    f"a run with parentRunId is a retry: triggerSource must be 'retry' "
                    f"(or left out), not {self.trigger_source[:64]!r}"
                )
        elif self.trigger_source in CHILD_SOURCES:
            raise ValueError(
                f"triggerSource {self.trigger_source!r} is a child run's: it needs "
                "parentRunId (node reruns and replays have their own endpoints)"
            )
        return self

    @model_validator(mode="after")
    def _dependencies_need_parent(self) -> RunCreate:
        if self.resolved_dependencies and not self.parent_run_id:
            raise ValueError("resolvedDependencies requires parentRunId")
        listed: set[str] = set()
        for dep in self.resolved_dependencies:
            if dep.node_id in listed:
                raise ValueError(f"resolvedDependencies: node {dep.node_id!r} is listed twice")
            listed.add(dep.node_id)
        return self


class RunAccepted(CamelModel):
    run_id: str
    workflow_definition_id: str
    status: str
    trigger_source: str
    started_at: datetime
    message: str

    @classmethod
    def of(cls, run: RunRecord, message: str, **extra: Any) -> Self:
        """The 202 body for a run just queued."""
        return cls(
            run_id=run.id,
            workflow_definition_id=run.workflow_definition_id,
            status=run.status,
            trigger_source=run.trigger_source,
            started_at=run.started_at,
            message=message,
            **extra,
        )
