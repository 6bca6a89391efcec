"""Who may see and change a workflow: its owner and grants (users and roles)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from activities.store.access import Grant, owner_principal
from activities.store.base import ChangedMeanwhile, Store
from activities.store.records import WorkflowRecord
from app.auth.acl import require_grantable
from app.auth.caller import SHARE
from app.auth.guard import CallerDep, needs
from app.deps import StoreDep, WorkflowDep
from app.errors import Detail, InvalidRequest, NotFound
from app.openapi import API_PREFIX, errors
from app.routes.conditional import IfMatch
from app.schemas.permissions import PermissionsUpdate, WorkflowPermissions
from app.services.precondition import content_tag, holds_to_a_tag, require_match, stale, tagged
from temporal_workflows.principals import principal_problem

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/permissions", tags=["permissions"])


@router.get("", dependencies=[needs(SHARE)])
async def get_permissions(workflow: WorkflowDep, response: Response) -> WorkflowPermissions:
    """The workflow's owner and grants (and their `ETag`, for `If-Match`)."""
    return tagged(response, WorkflowPermissions.of(workflow))


@router.put("", dependencies=[needs(SHARE, "SHARE")], responses=errors(412))
async def replace_permissions(
    workflow: WorkflowDep,
    body: PermissionsUpdate,
    store: StoreDep,
    caller: CallerDep,
    response: Response,
    if_match: IfMatch = None,
) -> WorkflowPermissions:
    """Replace the grants; every grant can VIEW; the owner keeps every permission. A
    caller may add only permissions they hold themselves (403 otherwise); 412 when
    `If-Match` is not the permissions' current `ETag`."""
    # A bad body is a 400 before a stale If-Match is a 412, as pydantic's checks are.
    _require_principals(body.grants, kept=workflow.grants)
    what = f"The permissions of workflow {workflow.id}"
    require_match(if_match, content_tag(WorkflowPermissions.of(workflow)), what)
    owner = owner_principal(workflow.owner)
    if any(g.principal == owner for g in body.grants):
        raise InvalidRequest(f"{owner} owns the workflow and holds every permission already")
    require_grantable(caller, workflow, body.grants)
    if not await _set_grants(store, workflow, body.grants, if_match, what):
        raise NotFound(f"Workflow {workflow.id!r} not found")
    return tagged(
        response, WorkflowPermissions.of(workflow.model_copy(update={"grants": body.grants}))
    )


def _require_principals(grants: list[Grant], kept: list[Grant]) -> None:
    """400 naming each grant whose principal breaks the rule (docs/security.md,
    "Principals"), unless the workflow has it already: a grant stored before the rule was
    stricter may be kept (`workflows share` sends every grant back) or revoked."""
    held = {g.principal for g in kept}
    details: list[Detail] = [
        {"path": f"grants[{i}].principal", "message": f"{g.principal[:210]!r}: {problem}"}
        for i, g in enumerate(grants)
        if g.principal not in held and (problem := principal_problem(g.principal))
    ]
    if details:
        raise InvalidRequest(
            "; ".join(f"{d['path']}: {d['message']}" for d in details), details=details
        )


async def _set_grants(
    store: Store, workflow: WorkflowRecord, grants: list[Grant], if_match: str | None, what: str
) -> bool:
    """Set the grants; under If-Match only over those checked (`workflow.grants`), in one
    step: of writers that read the same tag one wins, the others are told (412)."""
    if not holds_to_a_tag(if_match):
        return await store.set_workflow_grants(workflow.id, grants)
    try:
        return await store.set_workflow_grants(workflow.id, grants, read=workflow.grants)
    except ChangedMeanwhile:
        raise stale(if_match, what) from None
