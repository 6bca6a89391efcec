"""The approvals inbox: every pending gate across workflows, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from activities.store.records import RunRecord
from app.deps import StoreDep
from app.schemas.control import ApprovalItem, ApprovalPage
from app.schemas.workflow import Pagination

router = APIRouter(prefix="/approvals", tags=["approvals"])
MAX_SCANNED_RUNS = 5_000


@router.get("")
async def list_approvals(
    store: StoreDep,
    page: Annotated[int, Query(ge=1)] = 1,
    per_page: Annotated[int, Query(alias="perPage", ge=1, le=100)] = 20,
) -> ApprovalPage:
    """Pending gates (workflow, run, step, messages, age, deadline), oldest first."""
    runs = [
        *await store.list_runs_with_status("awaiting_approval", MAX_SCANNED_RUNS),
        *await store.list_runs_with_status("paused", MAX_SCANNED_RUNS),
    ]
    items = sorted(
        (_item(run, req) for run in runs for req in run.pending_requirements),
        key=lambda i: (i.created_at or datetime.max.replace(tzinfo=UTC), i.run_id, i.step_id),
    )
    start = (page - 1) * per_page
    return ApprovalPage(
        approvals=items[start : start + per_page],
        pagination=Pagination.of(len(items), page, per_page),
    )


def _item(run: RunRecord, req: dict[str, Any]) -> ApprovalItem:
    created = _parse(req.get("createdAt"))
    message = (
        req.get("confirmationMessage")
        or req.get("userInputMessage")
        or req.get("outputReviewMessage")
        or req.get("iterationReviewMessage")
    )
    return ApprovalItem(
        workflow_id=run.workflow_definition_id,
        workflow_name=run.definition_snapshot.name,
        run_id=run.id,
        run_status=run.status,
        step_id=req["stepId"],
        step_name=req.get("stepName"),
        step_type=req.get("stepType"),
        kind=req.get("kind"),
        message=message,
        created_at=created,
        age_seconds=(datetime.now(UTC) - created).total_seconds() if created else None,
        timeout_at=_parse(req.get("timeoutAt")),
        requirement=req,
    )


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
