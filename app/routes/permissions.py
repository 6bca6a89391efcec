"""Who may see and change a workflow: its owner and grants (users and roles)."""

from __future__ import annotations

from fastapi import APIRouter

from activities.store.access import owner_principal
from app.auth.acl import require_grantable
from app.auth.caller import SHARE
from app.auth.guard import CallerDep, needs
from app.deps import StoreDep, WorkflowDep
from app.errors import InvalidRequest, NotFound
from app.schemas.permissions import PermissionsUpdate, WorkflowPermissions

router = APIRouter(prefix="/workflows/{workflow_id}/permissions", tags=["permissions"])


@router.get("", dependencies=[needs(SHARE)])
async def get_permissions(workflow: WorkflowDep) -> WorkflowPermissions:
    """The workflow's owner and grants."""
    return WorkflowPermissions.of(workflow)


@router.put("", dependencies=[needs(SHARE, "SHARE")])
async def replace_permissions(
    workflow: WorkflowDep, body: PermissionsUpdate, store: StoreDep, caller: CallerDep
) -> WorkflowPermissions:
    """Replace the grants; every grant can VIEW; the owner keeps every permission. A
    caller may add only permissions they hold themselves (403 otherwise)."""
    owner = owner_principal(workflow.owner)
    if any(g.principal == owner for g in body.grants):
        raise InvalidRequest(f"{owner} owns the workflow and holds every permission already")
    require_grantable(caller, workflow, body.grants)
    if not await store.set_workflow_grants(workflow.id, body.grants):
        raise NotFound(f"Workflow {workflow.id!r} not found")
    return WorkflowPermissions.of(workflow.model_copy(update={"grants": body.grants}))
