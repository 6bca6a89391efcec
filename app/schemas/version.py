"""Response bodies of the definition-version endpoints."""

from __future__ import annotations

from datetime import datetime

from activities.store.records import VersionSummary, WorkflowVersionRecord
from temporal_workflows.base import CamelModel
from temporal_workflows.definition import WorkflowSpec


class WorkflowVersionSummary(CamelModel):
    version: int
    created_at: datetime
    name: str
    description: str | None
    num_nodes: int
    # The `sub` of the caller who saved it; null for versions saved before it was recorded.
    created_by: str | None = None

    @classmethod
    def of(cls, summary: VersionSummary) -> WorkflowVersionSummary:
        return cls(
            version=summary.version,
            created_at=summary.created_at,
            name=summary.name,
            description=summary.description,
            num_nodes=summary.num_nodes,
            created_by=summary.created_by,
        )


class WorkflowVersionList(CamelModel):
    versions: list[WorkflowVersionSummary]


class WorkflowVersionPublic(WorkflowSpec):
    """One kept version: the full definition as it was saved."""

    workflow_id: str
    version: int
    created_at: datetime
    created_by: str | None = None

    @classmethod
    def from_record(cls, record: WorkflowVersionRecord) -> WorkflowVersionPublic:
        return cls(
            workflow_id=record.workflow_id,
            version=record.version,
            created_at=record.created_at,
            created_by=record.created_by,
            **record.definition.model_dump(),
        )
