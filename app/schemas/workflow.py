"""Request and response bodies of the workflow-definition endpoints."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator

from activities.store.records import WorkflowRecord
from app.schemas.omittable import not_null, omittable
from temporal_workflows.base import INTEGRAL, CamelModel
from temporal_workflows.definition import (
    MAX_DESCRIPTION_LENGTH,
    MAX_NAME_LENGTH,
    Canvas,
    WorkflowName,
    WorkflowNode,
    WorkflowSpec,
    iter_nodes,
)


class WorkflowCreate(WorkflowSpec):
    """POST body: a definition. An `enabled` field is ignored (new workflows start disabled)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Customer onboarding",
                    "description": "Greets a new customer once a person confirms",
                    "nodes": [
                        {
                            "name": "Welcome",
                            "nodeType": "step",
                            "executorKey": "builtin:echo",
                            "config": {"message": "Welcome, {{ customerName }}"},
                            "humanReview": {"requiresConfirmation": True},
                        }
                    ],
                }
            ]
        }
    )


class WorkflowUpdate(CamelModel):
    """PUT body: every field optional; omitted fields keep their value."""

    model_config = ConfigDict(
        strict=True,
        json_schema_extra=omittable(
            "name",
            "canvas",
            "nodes",
            "maxConcurrency",
            "enabled",
            extra={"examples": [{"description": "Onboards new customers", "enabled": True}]},
        ),
    )

    name: WorkflowName | None = Field(default=None, min_length=1, max_length=MAX_NAME_LENGTH)
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)
    canvas: Canvas | None = None
    # Save time refuses an empty tree, as on create.
    nodes: Annotated[list[WorkflowNode], Field(json_schema_extra={"minItems": 1})] | None = None
    max_concurrency: Annotated[int, Field(ge=1, le=500), INTEGRAL] | None = None
    enabled: bool | None = Field(default=None, strict=True)

    # Omitting a field keeps it; an explicit null for a required field is a mistake.
    _given = field_validator(
        "name", "canvas", "nodes", "max_concurrency", "enabled", mode="before"
    )(not_null)

    def spec_changes(self) -> dict[str, Any]:
        """The definition fields this update sets (snake_case), `enabled` excluded."""
        return {k: getattr(self, k) for k in self.model_fields_set if k != "enabled"}


class ToggleRequest(CamelModel):
    model_config = ConfigDict(strict=True, json_schema_extra={"examples": [{"enabled": True}]})

    enabled: bool = Field(strict=True)


class WorkflowPublic(WorkflowSpec):
    """A definition as served: every node carries every field, recursively."""

    id: str
    enabled: bool
    version: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_record(cls, record: WorkflowRecord) -> WorkflowPublic:
        return cls.model_validate(record.model_dump(include=set(cls.model_fields)))


class WorkflowSummary(CamelModel):
    id: str
    name: str
    description: str | None
    num_nodes: int
    enabled: bool
    version: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_record(cls, record: WorkflowRecord) -> WorkflowSummary:
        return cls(
            id=record.id,
            name=record.name,
            description=record.description,
            num_nodes=len(iter_nodes(record.nodes)),
            enabled=record.enabled,
            version=record.version,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )


class Pagination(CamelModel):
    total: int
    page: int
    per_page: int
    total_pages: int

    @classmethod
    def of(cls, total: int, page: int, per_page: int) -> Pagination:
        return cls(
            total=total, page=page, per_page=per_page, total_pages=math.ceil(total / per_page)
        )


class WorkflowPage(CamelModel):
    workflows: list[WorkflowSummary]
    pagination: Pagination
