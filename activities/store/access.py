"""Who may do what with a workflow: its owner (every permission) and its grants.

Stored with the workflow; runs, node runs, events, versions, schedules and approvals
inherit it. The store filters lists by `viewer_principals`, so a list and its total count
only what a caller may see.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field, field_validator

from temporal_workflows.base import CamelModel
from temporal_workflows.principals import PRINCIPAL_PATTERN

Permission = Literal["VIEW", "EDIT", "DELETE", "SHARE"]
PERMISSIONS: tuple[Permission, ...] = ("VIEW", "EDIT", "DELETE", "SHARE")
# Who owns a workflow created before workflows had owners: the dev-mode caller, the only
# caller there was.
LEGACY_OWNER = "dev"


class Grant(CamelModel):
    """Permissions of one principal on one workflow; VIEW comes with any of them."""

    # Checked where grants are set (app/routes/permissions.py), not here: a grant stored
    # before the rule was stricter still loads (docs/security.md, "Principals").
    principal: str = Field(json_schema_extra={"pattern": PRINCIPAL_PATTERN})
    permissions: list[Permission] = Field(min_length=1, max_length=len(PERMISSIONS))

    @field_validator("permissions")
    @classmethod
    def _with_view_in_order(cls, value: list[Permission]) -> list[Permission]:
        # Editing or sharing what one cannot see makes no sense: every grant can VIEW.
        held = {*value, "VIEW"}
        return [p for p in PERMISSIONS if p in held]


def owner_principal(owner: str) -> str:
    return f"user:{owner}"


def viewer_principals(owner: str, grants: list[Grant]) -> list[str]:
    """Every principal that may VIEW: the owner and each grant (sorted, no duplicates)."""
    return sorted({owner_principal(owner), *(g.principal for g in grants)})


class Guarded(Protocol):
    """What an access check reads of a workflow: its id, owner and grants."""

    @property
    def id(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def grants(self) -> list[Grant]: ...


class WorkflowAccess(CamelModel):
    """A workflow's id, owner and grants, read without its definition (the lookups of
    everything under a workflow only check who may see it)."""

    id: str
    owner: str = LEGACY_OWNER
    grants: list[Grant] = Field(default_factory=list)
