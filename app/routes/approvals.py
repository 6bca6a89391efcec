"""The approvals inbox: every pending gate across workflows, oldest first."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.caller import READ
from app.auth.guard import CallerDep, needs
from app.deps import ApprovalsDep, Page, PerPage
from app.openapi import API_PREFIX
from app.schemas.control import ApprovalPage

router = APIRouter(prefix=API_PREFIX + "/approvals", tags=["approvals"])


@router.get("", dependencies=[needs(READ)])
async def list_approvals(
    approvals: ApprovalsDep,
    caller: CallerDep,
    page: Page = 1,
    per_page: PerPage = 20,
) -> ApprovalPage:
    """The pending gates the caller may decide (workflow, run, step, messages, age,
    deadline, approvers), oldest first."""
    return await approvals.page(page, per_page, caller)
