"""Start a run that continues as new early: the threshold is the starter's, not the API's."""

from __future__ import annotations

from typing import Any

from activities.run_start import start_run_workflow
from activities.store.records import RunRecord
from temporal_workflows.definition import WorkflowSpec
from tests.support.platform import Platform


async def start_continuing(
    platform: Platform,
    run_id: str,
    nodes: list[dict[str, Any]],
    *,
    after_events: int | None,
    initial_input: dict[str, Any] | None = None,
    **starter: Any,
) -> str:
    """Record and start run `run_id` of `nodes`, continuing as new past `after_events`
    history events (None: the starter's default); return the id of the workflow it is
    filed under. `starter`: more of the starter's own settings (start_run_workflow's)."""
    wf = await platform.create(
        {"nodes": [{"name": "x", "nodeType": "step", "executorKey": "builtin:echo"}]}
    )
    record = RunRecord(
        id=run_id,
        workflow_definition_id=wf,
        workflow_version=1,
        definition_snapshot=WorkflowSpec.model_validate({"name": run_id, "nodes": nodes}),
        initial_input=initial_input or {},
    )
    await platform.store.insert_run(record)
    await start_run_workflow(
        platform.client,
        record,
        task_queue=platform.task_queue,
        continue_as_new_after_events=after_events,
        **starter,
    )
    return wf
