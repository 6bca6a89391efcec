"""Starting runs: the store record first (so GETs see it at once), then the Temporal workflow."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from temporalio.client import Client

from activities.run_start import start_run_workflow
from activities.store.base import Store
from activities.store.records import RunRecord, WorkflowRecord, utcnow
from app.errors import InvalidRequest, NotFound, ServiceUnavailable
from app.schemas.run import RunCreate
from temporal_workflows.contracts import CachedOutput
from temporal_workflows.read_model import START_FAILED_REV

DISABLED_MESSAGE = "Workflow is disabled. Please enable the workflow before triggering a run."


@dataclass
class RunService:
    store: Store
    temporal: Client
    task_queue: str
    default_gate_timeout_seconds: float | None = None

    async def trigger(
        self, workflow: WorkflowRecord, body: RunCreate, idempotency_key: str | None
    ) -> RunRecord:
        """Validate and start a run; with an idempotency key, a repeat returns the same run."""
        if not workflow.enabled:
            raise InvalidRequest(DISABLED_MESSAGE)
        run_id = new_run_id(workflow.id, idempotency_key)
        existing = await self.store.get_run(run_id)
        if existing is not None:
            return existing
        cached = await self._cached_outputs(workflow, body)
        record = RunRecord(
            id=run_id,
            workflow_definition_id=workflow.id,
            workflow_version=workflow.version,
            trigger_source=body.trigger_source,
            initial_input=body.initial_input,
            definition_snapshot=workflow.spec(),
            parent_run_id=body.parent_run_id,
            resolved_dependencies=body.resolved_dependencies,
            idempotency_key=idempotency_key,
        )
        return await self.start(record, cached)

    async def start(
        self,
        record: RunRecord,
        cached: dict[str, CachedOutput] | None = None,
        stop_after_node_id: str | None = None,
    ) -> RunRecord:
        """Insert the pending run record and start its workflow (idempotent by run id)."""
        stored = await self.store.insert_run(record)
        try:
            await start_run_workflow(
                self.temporal,
                record,
                task_queue=self.task_queue,
                cached=cached,
                stop_after_node_id=stop_after_node_id,
                default_gate_timeout_seconds=self.default_gate_timeout_seconds,
            )
        except Exception as exc:
            await self.store.update_run(
                record.id,
                START_FAILED_REV,
                {
                    "status": "failed",
                    "finished_at": utcnow().isoformat(),
                    "error_summary": f"Run could not be started: {exc}",
                },
            )
            raise ServiceUnavailable(f"Temporal did not accept the run: {exc}") from exc
        return stored

    async def _cached_outputs(
        self, workflow: WorkflowRecord, body: RunCreate
    ) -> dict[str, CachedOutput]:
        """Outputs to reuse from the parent run, each checked against its node and run."""
        if body.parent_run_id is None:
            return {}
        parent = await self.store.get_run(body.parent_run_id)
        if parent is None or parent.workflow_definition_id != workflow.id:
            raise NotFound(f"Parent run {body.parent_run_id!r} not found for this workflow")
        cached: dict[str, CachedOutput] = {}
        for dep in body.resolved_dependencies:
            if dep.resolution != "reuse_previous_output":
                continue
            assert dep.source_node_run_id is not None
            source = await self.store.get_node_run(dep.source_node_run_id)
            if source is None or source.workflow_run_id != parent.id:
                raise InvalidRequest(
                    f"sourceNodeRunId {dep.source_node_run_id!r} is not a node run of "
                    f"parent run {parent.id!r}"
                )
            if source.node_id != dep.node_id:
                raise InvalidRequest(
                    f"sourceNodeRunId {dep.source_node_run_id!r} belongs to node "
                    f"{source.node_id!r}, not {dep.node_id!r}"
                )
            if source.status != "completed":
                raise InvalidRequest(
                    f"sourceNodeRunId {dep.source_node_run_id!r} did not complete "
                    f"(status {source.status}); its output cannot be reused"
                )
            cached[dep.node_id] = CachedOutput(
                source_node_run_id=source.id, output=source.output_snapshot
            )
        return cached


def new_run_id(workflow_id: str, idempotency_key: str | None) -> str:
    """A fresh run id, or one derived from the idempotency key (so repeats collide)."""
    if idempotency_key is None:
        return f"run-{uuid.uuid4()}"
    return f"run-{uuid.uuid5(uuid.NAMESPACE_URL, f'trellis:{workflow_id}:{idempotency_key}')}"
