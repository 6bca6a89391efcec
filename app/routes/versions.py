"""Kept versions of a definition: every save that changed it is readable."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.caller import READ
from app.auth.guard import needs
from app.deps import StoreDep, WorkflowDep, WorkflowVersionDep
from app.openapi import API_PREFIX
from app.schemas.version import WorkflowVersionList, WorkflowVersionPublic, WorkflowVersionSummary

router = APIRouter(prefix=API_PREFIX + "/workflows/{workflow_id}/versions", tags=["workflows"])


@router.get("", dependencies=[needs(READ)])
async def list_versions(workflow: WorkflowDep, store: StoreDep) -> WorkflowVersionList:
    """Every version of a definition, oldest first."""
    summaries = await store.list_workflow_versions(workflow.id)
    return WorkflowVersionList(versions=[WorkflowVersionSummary.of(s) for s in summaries])


@router.get("/{version}", dependencies=[needs(READ)])
async def get_version(version: WorkflowVersionDep) -> WorkflowVersionPublic:
    """One version's full definition."""
    return WorkflowVersionPublic.from_record(version)
