"""Small record builders for the store tests: fresh ids, explicit times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

from activities.store.records import NodeRunRecord, RunRecord, WorkflowRecord
from temporal_workflows.definition import WorkflowNode, WorkflowSpec

# Microseconds on purpose: a round trip must keep them.
T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """A time `seconds` after T0."""
    return T0 + timedelta(seconds=seconds)


def new_id() -> str:
    return str(uuid4())


def spec(name: str = "Onboarding", description: str | None = None) -> WorkflowSpec:
    node = WorkflowNode(id="step-1", name="Validate", node_type="step", executor_key="echo")
    return WorkflowSpec(name=name, description=description, nodes=[node])


def workflow(name: str | None = None, **fields: Any) -> WorkflowRecord:
    base = spec(name or f"wf-{new_id()}", fields.pop("description", None))
    return WorkflowRecord(**base.model_dump(by_alias=False), id=new_id(), **fields)


def run(workflow_id: str, **fields: Any) -> RunRecord:
    fields.setdefault("id", new_id())
    fields.setdefault("started_at", T0)
    fields.setdefault("definition_snapshot", spec())
    fields.setdefault("workflow_version", 1)
    return RunRecord(workflow_definition_id=workflow_id, **fields)


def node_run(run_id: str, **fields: Any) -> NodeRunRecord:
    fields.setdefault("id", new_id())
    return NodeRunRecord(workflow_run_id=run_id, node_id="step-1", node_name="Validate", **fields)
