"""Response bodies of the run endpoints (contract sections 8, 9, 11 and 12): a run, its
node runs, their pages. (A trigger's body and its answer: run_trigger.py.)"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import Field

from activities.store.records import NodeRunRecord, ResolvedDependency, RunHeader, RunRecord
from app.schemas.workflow import Pagination
from temporal_workflows.base import CamelModel
from temporal_workflows.contracts import Identity
from temporal_workflows.definition import WorkflowSpec


class NodeRunPublic(CamelModel):
    id: str
    node_id: str
    node_name: str
    node_type: str
    workflow_run_id: str
    status: str
    attempt: int
    input_snapshot: Any = None
    output_snapshot: Any = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    resolved_executor: dict[str, Any] | None = None
    reused_from_node_run_id: str | None = None
    # The container node run whose children it runs, and which map item or loop iteration
    # (0-based) of it; null for a top-level node run.
    parent_node_run_id: str | None = None
    item_index: int | None = None
    iteration: int | None = None

    @classmethod
    def from_record(cls, record: NodeRunRecord) -> NodeRunPublic:
        # Validating the record's own field values (already of these types) is a few
        # microseconds in pydantic-core, quicker than model_construct's Python loop.
        return cls.model_validate(record.__dict__)


class TriggeredBy(CamelModel):
    """Who triggered a run (the contract's triggering identity): never their token."""

    user_id: str
    username: str | None = None
    scopes: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, identity: Identity | None) -> TriggeredBy | None:
        if identity is None:
            return None
        return cls(user_id=identity.user_id, username=identity.username, scopes=identity.scopes)


class RunSummary(CamelModel):
    id: str
    workflow_definition_id: str
    workflow_version: int
    status: str
    trigger_source: str
    started_at: datetime
    finished_at: datetime | None = None
    parent_run_id: str | None = None
    error_summary: str | None = None
    # null: triggered without an identity (a schedule, dev mode).
    triggered_by: TriggeredBy | None = None
    # The schedule whose firing (or `POST …/trigger`) started it; null for any other run.
    schedule_id: str | None = None
    node_runs: list[NodeRunPublic] = Field(default_factory=list)

    @classmethod
    def from_record(cls, record: RunHeader, node_runs: list[NodeRunRecord]) -> Self:
        # From validated records of the same field types: nested models (a run detail's
        # definition snapshot) pass as the instances they are, and pydantic-core checks
        # the rest faster than model_construct would copy it.
        fields = {name: getattr(record, name) for name in cls.model_fields if name != "node_runs"}
        fields["triggered_by"] = TriggeredBy.of(record.triggered_by)
        fields["node_runs"] = [n.__dict__ for n in node_runs]
        return cls.model_validate(fields)


class RunPublic(RunSummary):
    initial_input: dict[str, Any]
    final_output: Any = None
    definition_snapshot: WorkflowSpec
    resolved_dependencies: list[ResolvedDependency] = Field(default_factory=list)
    pending_requirements: list[dict[str, Any]] = Field(default_factory=list)
    resolved_requirements: list[dict[str, Any]] = Field(default_factory=list)
    paused_at: datetime | None = None


class RunPage(CamelModel):
    runs: list[RunSummary]
    pagination: Pagination


class NodeRunList(CamelModel):
    run_id: str
    workflow_id: str
    node_runs: list[NodeRunPublic]

    @classmethod
    def of(cls, run: RunRecord, node_runs: list[NodeRunRecord]) -> NodeRunList:
        """Every node run of the run, in the store's order."""
        return cls(
            run_id=run.id,
            workflow_id=run.workflow_definition_id,
            node_runs=[NodeRunPublic.from_record(n) for n in node_runs],
        )


class NodeRunSummary(CamelModel):
    total: int
    by_status: dict[str, int]


class RunWithSummary(RunPublic):
    """The run detail with its node runs counted instead of listed (`?nodeRuns=summary`).

    `nodeRuns` is empty; page through them with `GET …/nodes?page=&perPage=`.
    """

    node_run_summary: NodeRunSummary

    @classmethod
    def summarised(cls, record: RunRecord, counts: dict[str, int]) -> RunWithSummary:
        detail = RunPublic.from_record(record, [])
        summary = NodeRunSummary(total=sum(counts.values()), by_status=counts)
        built = cls.model_construct(**dict(detail), node_run_summary=summary)
        return built


class CountedRunSummary(RunSummary):
    """A run of a list with its node runs counted instead of listed (`?nodeRuns=summary`):
    `nodeRuns` is empty."""

    node_run_summary: NodeRunSummary

    @classmethod
    def counted(cls, record: RunHeader, counts: dict[str, int]) -> CountedRunSummary:
        summary = NodeRunSummary(total=sum(counts.values()), by_status=counts)
        return cls.model_construct(
            **dict(RunSummary.from_record(record, [])), node_run_summary=summary
        )


class CountedRunPage(CamelModel):
    """A page of runs, each with its node runs counted (`?nodeRuns=summary`)."""

    runs: list[CountedRunSummary]
    pagination: Pagination


class NodeRunPage(NodeRunList):
    """One page of a run's node runs (`GET …/nodes?page=&perPage=`), in the same order."""

    pagination: Pagination
