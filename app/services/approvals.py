"""The approvals inbox: every open gate across workflows, flattened, oldest first, paged."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities.store.base import Store
from activities.store.records import GatedRun
from app.auth.acl import may_decide, viewer_of
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
            *await self.store.list_gated_runs("awaiting_approval", MAX_SCANNED_RUNS, viewer),
            *await self.store.list_gated_runs("paused", MAX_SCANNED_RUNS, viewer),
        ]
        gates = [
            (_created(req), run, place, req, who)
            for run in runs
            for place, req in enumerate(run.pending_requirements)
            if may_decide(caller, who := run.approvers_of(req["stepId"]))
        ]
        # Sorted by what the gates hold; only the page's are made into answers. Gates of one
        # run opened at once (a parallel node's) keep the order they opened in, the
        # definition's, not their step ids' (random uuids).
        gates.sort(key=lambda g: (g[0] or NEVER, g[1].id, g[2]))
        start = (page - 1) * per_page
        return ApprovalPage(
            approvals=[
                _item(created, run, req, who)
                for created, run, _, req, who in gates[start : start + per_page]
            ],
            pagination=Pagination.of(len(gates), page, per_page),
        )


def _created(req: dict[str, Any]) -> datetime | None:
    return _parse(req.get("createdAt"))


def _item(
    created: datetime | None, run: GatedRun, req: dict[str, Any], approvers: list[str]
) -> ApprovalItem:
    message = (
        req.get("confirmationMessage")
        or req.get("userInputMessage")
        or req.get("outputReviewMessage")
        or req.get("iterationReviewMessage")
    )
    return ApprovalItem(
        workflow_id=run.workflow_definition_id,
        workflow_name=run.workflow_name,
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
