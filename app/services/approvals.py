"""The approvals inbox: every open gate across workflows, flattened, oldest first, paged."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities.store.base import Store
from activities.store.records import RunRecord
from app.auth.acl import approvers_of, may_decide, viewer_of
from app.auth.caller import Caller
from app.schemas.control import ApprovalItem, ApprovalPage
from app.schemas.workflow import Pagination

# Runs scanned per status: the inbox is a working list, not an archive.
MAX_SCANNED_RUNS = 5_000
NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass
class ApprovalService:
    store: Store

    async def page(self, page: int, per_page: int, caller: Caller) -> ApprovalPage:
        """The open gates the caller may decide, in waiting and paused runs of workflows
        they may see (workflow, run, step, message, age, deadline, approvers)."""
        viewer = viewer_of(caller)
        runs = [
            *await self.store.list_runs_with_status("awaiting_approval", MAX_SCANNED_RUNS, viewer),
            *await self.store.list_runs_with_status("paused", MAX_SCANNED_RUNS, viewer),
        ]
        gates = [
            (run, req, approvers_of(run, req["stepId"]))
            for run in runs
            for req in run.pending_requirements
        ]
        items = sorted(
            (_item(run, req, who) for run, req, who in gates if may_decide(caller, who)),
            key=lambda i: (i.created_at or NEVER, i.run_id, i.step_id),
        )
        start = (page - 1) * per_page
        return ApprovalPage(
            approvals=items[start : start + per_page],
            pagination=Pagination.of(len(items), page, per_page),
        )


def _item(run: RunRecord, req: dict[str, Any], approvers: list[str]) -> ApprovalItem:
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
        approvers=approvers,
        requirement=req,
    )


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
