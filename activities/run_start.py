"""Starting a run's interpreter workflow for a stored run record (API and schedules alike)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
)

from activities.store.records import RunRecord
from temporal_workflows import search_attributes
from temporal_workflows.contracts import WORKFLOW_TYPE, CachedOutput, RunInput


async def start_run_workflow(
    client: Client,
    record: RunRecord,
    *,
    task_queue: str,
    cached: dict[str, CachedOutput] | None = None,
    stop_after_node_id: str | None = None,
    default_gate_timeout_seconds: float | None = None,
    history_event_budget: int | None = None,
    continue_as_new_after_events: int | None = None,
) -> None:
    """Start `TrellisRun` for the record; starting the same run id again is a no-op."""
    run_input = RunInput(
        run_id=record.id,
        workflow_id=record.workflow_definition_id,
        workflow_version=record.workflow_version,
        definition=record.definition_snapshot,
        initial_input=record.initial_input,
        trigger_source=record.trigger_source,
        parent_run_id=record.parent_run_id,
        cached_outputs=cached or {},
        stop_after_node_id=stop_after_node_id,
        default_gate_timeout_seconds=default_gate_timeout_seconds,
        **({} if history_event_budget is None else {"history_event_budget": history_event_budget}),
        **(
            {}
            if continue_as_new_after_events is None
            else {"continue_as_new_after_events": continue_as_new_after_events}
        ),
    )
    await client.start_workflow(
        WORKFLOW_TYPE,
        run_input,
        id=record.id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        search_attributes=run_search_attributes(record),
        static_summary=record.definition_snapshot.name,
        static_details=run_details(record),
    )


def run_search_attributes(record: RunRecord) -> TypedSearchAttributes:
    pairs = [
        SearchAttributePair(search_attributes.DEFINITION_ID, record.workflow_definition_id),
        SearchAttributePair(search_attributes.RUN_STATUS, "pending"),
        SearchAttributePair(search_attributes.TRIGGER_SOURCE, record.trigger_source),
    ]
    if record.parent_run_id:
        pairs.append(SearchAttributePair(search_attributes.PARENT_RUN_ID, record.parent_run_id))
    return TypedSearchAttributes(pairs)


def run_details(record: RunRecord) -> str:
    return (
        f"Workflow {record.definition_snapshot.name!r} (definition "
        f"{record.workflow_definition_id}, version {record.workflow_version}), "
        f"triggered by {record.trigger_source}"
    )
