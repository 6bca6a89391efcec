"""What a caller may do with one workflow: its owner may do everything, a grant what it
lists, the dev admin everything. A workflow the caller may not VIEW does not exist for
them (404, like an unknown id), so ids cannot be probed; lacking another permission on a
workflow they can see is 403."""

from __future__ import annotations

from collections.abc import Collection

from activities.store.access import PERMISSIONS, Grant, Guarded, Permission, owner_principal
from activities.store.base import Viewer
from activities.store.records import RunRecord
from app.auth.caller import CONTROL, Caller
from app.errors import Forbidden, NotFound
from temporal_workflows.definition import WorkflowNode, approvers_by_step, iter_nodes


def permissions_of(caller: Caller, workflow: Guarded) -> frozenset[Permission]:
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


def require(caller: Caller, workflow: Guarded, permission: Permission) -> None:
    """404 without VIEW; 403 naming the permission when VIEW is not enough."""
    held = permissions_of(caller, workflow)
    if "VIEW" not in held:
        raise not_found(workflow.id)
    if permission not in held:
        raise Forbidden(
            f"This request needs the {permission} permission on workflow {workflow.id!r}"
        )


def require_grantable(caller: Caller, workflow: Guarded, grants: list[Grant]) -> None:
    """403 when new grants would add a permission the caller does not hold: SHARE lets
    its holder pass on what they have, not make themselves (or anyone) an editor.
    Permissions a principal holds already, and removals, pass."""
    held = permissions_of(caller, workflow)
    before = {g.principal: set(g.permissions) for g in workflow.grants}
    added = {p for g in grants for p in g.permissions if p not in before.get(g.principal, set())}
    missing = [p for p in PERMISSIONS if p in added and p not in held]
    if missing:
        raise Forbidden(
            f"Granting {', '.join(missing)} needs holding it on workflow {workflow.id!r}: "
            "a grant may add only permissions its granter holds"
        )


def approvers_of(run: RunRecord, step_id: str) -> list[str]:
    """Who may decide the gates of node `step_id` in the run's definition (empty: anyone
    who may control the run)."""
    return approvers_by_step(run.definition_snapshot.nodes).get(step_id, [])


def is_approver(caller: Caller, approvers: list[str]) -> bool:
    """Whether the caller is one of `approvers` (everyone is when there are none)."""
    return caller.admin or not approvers or not caller.principals.isdisjoint(approvers)


def may_decide(caller: Caller, approvers: list[str]) -> bool:
    """Whether the caller may decide a gate of a run they can see."""
    return caller.has_scope(CONTROL) and is_approver(caller, approvers)


def require_approver(caller: Caller, run: RunRecord, step_id: str) -> None:
    """403 naming who may decide, when the caller is not among the gate's approvers."""
    approvers = approvers_of(run, step_id)
    if not is_approver(caller, approvers):
        # Named as the reuse refusal names it: its id and its name.
        named = {n.id: n.name for n in iter_nodes(run.definition_snapshot.nodes)}
        name = f" ({named[step_id]!r})" if step_id in named else ""
        raise Forbidden(f"Only {', '.join(approvers)} may decide step {step_id!r}{name}")


def require_reuse_approver(
    caller: Caller, nodes: list[WorkflowNode], reused: Collection[str]
) -> None:
    """403 naming the gate and who may decide it, when a new run would reuse the decided
    output of a node (of `reused`) whose gate names approvers the caller is not among.

    Checked whatever the new run's input: the caller of the contract 7 form also chooses
    which steps before the gate run again (on fresh data) and the definition is the live
    one, so an equal input does not mean the decision was made on what the new run holds.
    """
    for node in iter_nodes(nodes):
        review = node.human_review
        if node.id not in reused or review is None or is_approver(caller, review.approvers):
            continue
        raise Forbidden(
            f"Only {', '.join(review.approvers)} may decide step {node.id!r} ({node.name!r}), "
            "so only they may reuse its decided output in a new run (resolvedDependencies)"
        )
