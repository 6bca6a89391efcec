"""Response bodies of the definition-version endpoints."""

from __future__ import annotations

from datetime import datetime

from activities.store.records import WorkflowVersionRecord
from temporal_workflows.base import CamelModel
from temporal_workflows.definition import WorkflowSpec, iter_nodes


class WorkflowVersionSummary(CamelModel):
    version: int
    created_at: datetime
    name: str
    description: str | None
    num_nodes: int

    @classmethod
    def from_record(cls, record: WorkflowVersionRecord) -> WorkflowVersionSummary:
        spec = record.definition
        return cls(
            version=record.version,
            created_at=record.created_at,
            name=spec.name,
            description=spec.description,
            num_nodes=len(iter_nodes(spec.nodes)),
        )


class WorkflowVersionList(CamelModel):
    versions: list[WorkflowVersionSummary]


class WorkflowVersionPublic(WorkflowSpec):
    """One kept version: the full definition as it was saved."""

    workflow_id: str
    version: int
    created_at: datetime

    @classmethod
    def from_record(cls, record: WorkflowVersionRecord) -> WorkflowVersionPublic:
        return cls(
            workflow_id=record.workflow_id,
            version=record.version,
            created_at=record.created_at,
            **record.definition.model_dump(),
        )
