"""Bodies of the control endpoints: approve (contract 10), pause/resume/cancel, approvals."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from app.schemas.run_data import run_data
from app.schemas.run_trigger import IdStr
from app.schemas.workflow import Pagination
from temporal_workflows.base import CamelModel
from temporal_workflows.gates import GateKind, Resolution


class SeenGate(CamelModel):
    """Which opening of the step's gate the caller saw, as its `pendingRequirements` entry
    (or the inbox) showed it. A step's gate opens again on the same `stepId` (a loop's next
    iteration review, a review re-opened after a rejection, a map's next item): a decision
    naming the one it saw is refused (409) once another is open, rather than deciding one
    nobody saw."""

    model_config = ConfigDict(strict=True)

    node_run_id: str = Field(max_length=500)
    iteration: int | None = None
    item_index: int | None = None
    kind: GateKind | None = None


class ApproveRequest(CamelModel):
    model_config = ConfigDict(
        strict=True,
        json_schema_extra={
            "examples": [
                {"stepId": "welcome", "resolution": "confirm"},
                {"stepId": "review", "resolution": "reject", "feedback": "Wrong plan"},
            ]
        },
    )

    step_id: IdStr
    resolution: Resolution
    feedback: str | None = Field(default=None, max_length=10_000)
    edited_output: Annotated[Any, run_data("editedOutput")] = None
    user_input: Annotated[dict[str, Any] | None, run_data("userInput")] = None
    selected_choices: Annotated[list[str] | None, run_data("selectedChoices")] = Field(
        default=None, max_length=100
    )
    # An extension of the contract: without it, the gate open when the request arrives.
    gate: SeenGate | None = None


class ApproveResponse(CamelModel):
    run_id: str
    status: str
    resolved_step_id: str
    message: str


class ControlResponse(CamelModel):
    run_id: str
    status: str
    message: str


class LiveRequirements(CamelModel):
    run_id: str
    status: str
    # "workflow" when read live through a Temporal query, "store" otherwise.
    source: str
    pending_requirements: list[dict[str, Any]]


class ApprovalItem(CamelModel):
    workflow_id: str
    workflow_name: str
    run_id: str
    run_status: str
    step_id: str
    step_name: str | None = None
    step_type: str | None = None
    kind: str | None = None
    message: str | None = None
    created_at: datetime | None = None
    age_seconds: float | None = None
    timeout_at: datetime | None = None
    # Who may decide it (`user:<sub>`, `role:<role>`); empty: anyone with
    # workflows-control who may see the workflow.
    approvers: list[str] = Field(default_factory=list)
    requirement: dict[str, Any]


class ApprovalPage(CamelModel):
    approvals: list[ApprovalItem]
    pagination: Pagination
