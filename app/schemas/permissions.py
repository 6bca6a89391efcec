"""Bodies of the permissions endpoints: a workflow's owner and grants."""

from __future__ import annotations

from pydantic import Field, model_validator

from activities.store.access import Grant, owner_principal
from activities.store.records import WorkflowRecord
from temporal_workflows.base import CamelModel

MAX_GRANTS = 200


class PermissionsUpdate(CamelModel):
    """PUT body: the grants replace the workflow's grants (the owner keeps every permission)."""

    grants: list[Grant] = Field(
        max_length=MAX_GRANTS,
        json_schema_extra={"uniqueItems": True},
        description="Each principal at most once (checked by the API, 400 naming the repeated "
        "ones: JSON Schema's uniqueItems refuses only grants equal as a whole, not two "
        "grants of one principal). The workflow's owner is no grant (400).",
    )

    @model_validator(mode="after")
    def _one_grant_per_principal(self) -> PermissionsUpdate:
        principals = [g.principal for g in self.grants]
        repeated = sorted({p for p in principals if principals.count(p) > 1})
        if repeated:
            raise ValueError(f"each principal may appear once; repeated: {', '.join(repeated)}")
        return self


class WorkflowPermissions(CamelModel):
    workflow_id: str
    # `user:<sub>` of the creator, who holds every permission.
    owner: str
    grants: list[Grant]

    @classmethod
    def of(cls, record: WorkflowRecord) -> WorkflowPermissions:
        return cls(workflow_id=record.id, owner=owner_principal(record.owner), grants=record.grants)
