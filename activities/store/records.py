"""Stored documents: workflow definitions (with versions), runs and node runs.

Stored snake_case (`to_document`), served camelCase by the API through the same models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from activities.store.access import LEGACY_OWNER, Grant
from temporal_workflows.base import CamelModel
from temporal_workflows.contracts import Identity
from temporal_workflows.definition import WorkflowSpec, approvers_by_step, iter_nodes
from temporal_workflows.read_model import NodeRunStatus, RunStatus


def utcnow() -> datetime:
    return datetime.now(UTC)


class StoredModel(CamelModel):
    def to_document(self) -> dict[str, Any]:
        """The snake_case, JSON-safe document this record is stored as."""
        return self.model_dump(mode="json", by_alias=False)


class WorkflowRecord(WorkflowSpec, StoredModel):
    id: str
    enabled: bool = False
    version: int = 1
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    # Its ACL (activities/store/access.py): the creator's sub, and what others may do.
    # Saving the definition keeps both; only `set_workflow_grants` changes the grants.
    owner: str = LEGACY_OWNER
    grants: list[Grant] = Field(default_factory=list)
    # Who saved this version (the caller's `sub`): kept with the version. None for records
    # saved before Trellis recorded it; a toggle keeps it.
    saved_by: str | None = None

    def spec(self) -> WorkflowSpec:
        return WorkflowSpec.model_validate(self.model_dump(include=set(WorkflowSpec.model_fields)))


class WorkflowVersionRecord(StoredModel):
    workflow_id: str
    version: int
    definition: WorkflowSpec
    created_at: datetime = Field(default_factory=utcnow)
    created_by: str | None = None


class ResolvedDependency(CamelModel):
    # Reusing an output needs the node run it comes from (the schema says so too).
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"resolution": {"const": "reuse_previous_output"}}},
            "then": {
                "required": ["sourceNodeRunId"],
                "properties": {"sourceNodeRunId": {"type": "string", "minLength": 1}},
            },
        }
    )

    node_id: str
    resolution: Literal["reuse_previous_output", "rerun"]
    source_node_run_id: str | None = None


class RunHeader(StoredModel):
    """A run without its definition snapshot: what lists of runs show, read without
    parsing a definition per run."""

    id: str
    workflow_definition_id: str
    workflow_version: int
    status: RunStatus = "pending"
    trigger_source: str = "manual"
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    initial_input: dict[str, Any] = Field(default_factory=dict)
    final_output: Any = None
    error_summary: str | None = None
    parent_run_id: str | None = None
    resolved_dependencies: list[ResolvedDependency] = Field(default_factory=list)
    pending_requirements: list[dict[str, Any]] = Field(default_factory=list)
    resolved_requirements: list[dict[str, Any]] = Field(default_factory=list)
    paused_at: datetime | None = None
    idempotency_key: str | None = None
    # How its workflow is started, kept so that whoever starts a never-started run (a
    # repeated trigger, the reconciler) starts it as the first caller would have.
    stop_after_node_id: str | None = None
    default_gate_timeout_seconds: float | None = None
    # Who triggered the run: a verified caller's identity, never a token (None: a schedule,
    # dev mode); its workflow's input carries the same.
    triggered_by: Identity | None = None
    # The schedule whose firing started the run (its `POST …/trigger` too); None otherwise.
    schedule_id: str | None = None
    # That firing's trigger workflow (a schedule's `recentActions[].triggerWorkflowId`), so
    # a firing names its run; None for other runs and those recorded before it was kept.
    trigger_workflow_id: str | None = None
    # Writes carry a revision from the workflow; an older revision never overwrites a newer one.
    rev: int = 0
    # Which workflow task wrote the run's end (its history length then): an end a later
    # task wrote is kept over an earlier one's (`Store.update_run`'s `ending`), never back.
    end_order: int | None = None
    # The Temporal execution that speaks for the run, and the few it replaced (a reset's
    # new execution takes the run over: activities/store/executions.py).
    execution: str | None = None
    earlier_executions: list[str] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)


class RunRecord(RunHeader):
    # The definition as the run was started with it (the largest part of a run).
    definition_snapshot: WorkflowSpec


@dataclass(frozen=True)
class VersionSummary:
    """A kept version as its list shows it, without its definition: parsing each of a
    thousand versions whole took ~0.3-0.6 s of the API's loop."""

    version: int
    created_at: datetime
    name: str
    description: str | None
    num_nodes: int
    created_by: str | None = None

    @classmethod
    def of(cls, record: WorkflowVersionRecord) -> VersionSummary:
        """From a whole version (what a store without JSON functions reads)."""
        spec = record.definition
        return cls(
            version=record.version,
            created_at=record.created_at,
            name=spec.name,
            description=spec.description,
            num_nodes=len(iter_nodes(spec.nodes)),
            created_by=record.created_by,
        )


def stored_node_count(nodes: list[dict[str, Any]]) -> int:
    """How many nodes a stored (snake_case) tree holds, nested ones too: what
    `iter_nodes` counts of the parsed tree (`WorkflowNode.child_sequences`)."""
    count, pending = 0, list(nodes)
    while pending:
        node = pending.pop()
        count += 1
        for field in ("children", "true_steps", "false_steps"):
            pending += node.get(field) or []
        for choice in node.get("choices") or []:
            pending += choice.get("steps") or []
    return count


@dataclass(frozen=True)
class GatedRun:
    """A run with open gates, as the approvals inbox and the gates gauge read it: its
    gates and, by step id, who may decide them; not its definition snapshot, whose
    parsing made a large inbox cost a second."""

    id: str
    workflow_definition_id: str
    workflow_name: str
    status: str
    pending_requirements: list[dict[str, Any]]
    # Step id -> the approvers its humanReview names (a step without any is not here).
    approvers: dict[str, list[str]]

    @classmethod
    def of(cls, run: RunRecord) -> GatedRun:
        """From a whole run (what a store without JSON functions reads)."""
        return cls(
            id=run.id,
            workflow_definition_id=run.workflow_definition_id,
            workflow_name=run.definition_snapshot.name,
            status=run.status,
            pending_requirements=run.pending_requirements,
            approvers=approvers_by_step(run.definition_snapshot.nodes),
        )

    def approvers_of(self, step_id: str) -> list[str]:
        """Who may decide the gates of `step_id` (empty: anyone who may control the run)."""
        return self.approvers.get(step_id, [])


class NodeRunRecord(StoredModel):
    id: str
    workflow_run_id: str
    node_id: str
    node_name: str
    node_type: str = "step"
    status: NodeRunStatus = "pending"
    attempt: int = 0
    input_snapshot: Any = None
    output_snapshot: Any = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    resolved_executor: dict[str, Any] | None = None
    reused_from_node_run_id: str | None = None
    # Where it sits inside a container (temporal_workflows/placement.py); None: top level.
    parent_node_run_id: str | None = None
    item_index: int | None = None
    iteration: int | None = None
    rev: int = 0
    # As a run's (activities/store/executions.py).
    execution: str | None = None
    earlier_executions: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class EndedRunsDeleted:
    """One batch of the run retention's deletes (`Store.delete_ended_runs`)."""

    # Runs the batch found due, and those this caller deleted (fewer when another worker's
    # sweep deleted some of them first).
    found: int
    deleted: int
    # When the earliest-ended run it found due ended (on MongoDB another sweep may have
    # deleted that one); None when it found none.
    oldest_end: datetime | None
    # Whether due runs may remain: a full batch, or one cut short by its rows.
    more: bool = False
    # Large payloads deleted with them: those no other run referred to (`put_payload`).
    payloads: int = 0


@dataclass(frozen=True)
class FiringRefsDeleted:
    """One batch of the firings' payload sweep (`Store.delete_firing_payloads`)."""

    # References of firings found due (a full batch: more may be), and payloads deleted with
    # them: those nothing else refers to.
    refs: int
    payloads: int


@dataclass(frozen=True)
class A2ATaskRef:
    """A task an A2A step started at an agent (`Store.record_a2a_task`): its node run, the
    agent as the catalog names it, and the agent's id for the task."""

    run_id: str
    node_run_id: str
    agent: str
    task_id: str


@dataclass(frozen=True)
class AbandonedA2ATask:
    """A noted task the abandoned-task sweep claimed (`Store.claim_abandoned_a2a_tasks`)."""

    ref: A2ATaskRef
    # When a sweep first failed to reach its agent; None until one has.
    first_failed_at: datetime | None = None
