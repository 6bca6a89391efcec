"""A run by its id alone, for clients that hold only a run id (the `trellis` CLI)."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import AnyRunDep, StoreDep
from app.schemas.run import RunPublic

router = APIRouter(prefix="/runs", tags=["runs"])


@router.get("/{run_id}", dependencies=[needs(READ)])
async def find_run(run: AnyRunDep, store: StoreDep) -> RunPublic:
    """One run, whichever workflow it belongs to (`workflowDefinitionId` names it)."""
    return RunPublic.from_record(run, await store.list_node_runs([run.id]))
