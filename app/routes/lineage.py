"""Runs from runs: retry, single-node rerun, replay (contract 7, 13, 14)."""

from __future__ import annotations

from fastapi import APIRouter, status
from fastapi.params import Depends as DependsParam

from activities.store.records import RunRecord
from app.auth.caller import CONTROL
from app.auth.guard import needs
from app.deps import KEY_REUSED, IdempotencyKey, LineageDep, NodeIdDep, RunDep, WorkflowDep
from app.no_body import no_body
from app.openapi import API_PREFIX, errors
from app.schemas.lineage import ChildRunAccepted, NodeRerunAccepted
from app.schemas.run_trigger import OPTIONAL_TRIGGER_NAMES

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/runs/{run_id}", tags=["lineage"])
KEY_RESPONSES = errors(400, 409, s409=KEY_REUSED)


def _no_body(what: str, instead: str) -> DependsParam:
    """Retry, rerun and replay take the source run's input as it was (contract 13: "Request
    Body: Empty"; 14: "no additional input is accepted")."""
    return no_body(
        what,
        f"the source run's initialInput is used as it was ({instead})",
        OPTIONAL_TRIGGER_NAMES,
    )


_NEW_INPUT = "trigger a new run to give another input"


# 200, not 202 like rerun and replay: contract 3.2 ("HTTP 200 returned immediately with the
# child run's ID"), while 3.3 and 3.4 answer 202.
@router.post(
    "/retry",
    status_code=status.HTTP_200_OK,
    dependencies=[
        needs(CONTROL),
        _no_body(
            "retry",
            "to choose what runs again, POST …/runs with parentRunId and "
            "resolvedDependencies; " + _NEW_INPUT,
        ),
    ],
    responses=KEY_RESPONSES,
)
async def retry_run(
    workflow: WorkflowDep,
    run: RunDep,
    lineage: LineageDep,
    idempotency_key: IdempotencyKey = None,
) -> ChildRunAccepted:
    """Retry a failed or cancelled run, reusing the outputs of the steps that completed."""
    child = await lineage.retry(workflow, run, idempotency_key)
    return _accepted(child, f"Retry of run {run.id} queued as run {child.id}")


@router.post(
    "/nodes/{node_id}/rerun",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[needs(CONTROL), _no_body("node rerun", _NEW_INPUT)],
    responses=KEY_RESPONSES,
)
async def rerun_node(
    workflow: WorkflowDep,
    run: RunDep,
    node_id: NodeIdDep,
    lineage: LineageDep,
    idempotency_key: IdempotencyKey = None,
) -> NodeRerunAccepted:
    """Rerun one top-level step; the nodes before it are replayed from cached outputs."""
    child = await lineage.rerun_node(workflow, run, node_id, idempotency_key)
    return NodeRerunAccepted(
        run_id=child.id,
        status=child.status,
        message=f"Node '{node_id}' rerun queued as run {child.id}",
    )


@router.post(
    "/replay",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[needs(CONTROL), _no_body("replay", _NEW_INPUT)],
    responses=errors(400, 409, s409=KEY_REUSED),
)
async def replay_run(
    workflow: WorkflowDep,
    run: RunDep,
    lineage: LineageDep,
    idempotency_key: IdempotencyKey = None,
) -> ChildRunAccepted:
    """Run the live definition again from scratch with the source run's initial input."""
    child = await lineage.replay(workflow, run, idempotency_key)
    return _accepted(child, f"Replay of run {run.id} queued as run {child.id}")


def _accepted(child: RunRecord, message: str) -> ChildRunAccepted:
    assert child.parent_run_id is not None
    return ChildRunAccepted.of(child, message, parent_run_id=child.parent_run_id)
