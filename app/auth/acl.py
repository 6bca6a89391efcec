"""What a caller may do with one workflow: its owner may do everything, a grant what it
lists, the dev admin everything. A workflow the caller may not VIEW does not exist for
them (404, like an unknown id), so ids cannot be probed; lacking another permission on a
workflow they can see is 403."""

from __future__ import annotations

from activities.store.access import PERMISSIONS, Permission, owner_principal
from activities.store.base import Viewer
from activities.store.records import WorkflowRecord
from app.auth.caller import Caller
from app.errors import Forbidden, NotFound


def permissions_of(caller: Caller, workflow: WorkflowRecord) -> frozenset[Permission]:
    """Every permission the caller holds on the workflow."""
    if caller.admin or owner_principal(workflow.owner) in caller.principals:
        return frozenset(PERMISSIONS)
    held: set[Permission] = set()
    for grant in workflow.grants:
        if grant.principal in caller.principals:
            held.update(grant.permissions)
    return frozenset(held)


def viewer_of(caller: Caller) -> Viewer:
    """The principals lists are filtered for; None (everything) for the dev admin."""
    return None if caller.admin else caller.principals


def not_found(workflow_id: str) -> NotFound:
    """The one answer for a workflow that does not exist or may not be seen."""
    return NotFound(f"Workflow {workflow_id!r} not found")


def require(caller: Caller, workflow: WorkflowRecord, permission: Permission) -> None:
    """404 without VIEW; 403 naming the permission when VIEW is not enough."""
    held = permissions_of(caller, workflow)
    if "VIEW" not in held:
        raise not_found(workflow.id)
    if permission not in held:
        raise Forbidden(
            f"This request needs the {permission} permission on workflow {workflow.id!r}"
        )
