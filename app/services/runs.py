"""Triggering runs (contract 7): idempotency, the explicit retry form, then the one start path."""

from __future__ import annotations

from dataclasses import dataclass

from activities.run_start import RunStarter, new_run_record, require_enabled
from activities.store.base import Store
from activities.store.records import ResolvedDependency, RunRecord, WorkflowRecord
from app.auth.acl import require_reuse_approver
from app.auth.caller import Caller
from app.errors import InvalidRequest, NotFound
from app.schemas.run_trigger import RunCreate
from app.services.idempotency import Asked, asker, repeated_run, start_first_use
from app.services.lineage import reusable_steps
from temporal_workflows.contracts import CachedOutput, Identity
from temporal_workflows.definition import iter_nodes
from temporal_workflows.read_model import TERMINAL_RUN_STATUSES


@dataclass
class RunService:
    store: Store
    starter: RunStarter
    # Who triggers: recorded with the run, carried into its workflow, and checked against
    # the approvers of gates whose decided outputs the run would reuse.
    caller: Caller

    @property
    def triggered_by(self) -> Identity | None:
        return self.caller.identity()

    async def trigger(
        self, workflow: WorkflowRecord, body: RunCreate, idempotency_key: str | None
    ) -> RunRecord:
        """Validate and start a run; with an idempotency key, a repeat returns the same run
        (app/services/idempotency.py)."""
        asked = trigger_request(body, self.triggered_by)
        repeat = await repeated_run(self.starter, workflow, idempotency_key, asked)
        if repeat is not None:
            return repeat
        require_enabled(workflow)
        cached = await self._cached_outputs(workflow, body)
        # Before anything is written: a gate's decision stands in for its approvers only.
        require_reuse_approver(self.caller, workflow.nodes, cached.keys())
        record = new_run_record(
            workflow,
            body.trigger_source,
            body.initial_input,
            parent_run_id=body.parent_run_id,
            resolved_dependencies=list[ResolvedDependency](body.resolved_dependencies),
            idempotency_key=idempotency_key,
            triggered_by=self.triggered_by,
        )
        return await start_first_use(self.starter, workflow, record, asked, cached=cached)

    async def _cached_outputs(
        self, workflow: WorkflowRecord, body: RunCreate
    ) -> dict[str, CachedOutput]:
        """Outputs to reuse from the parent run, each checked against its node and run."""
        if body.parent_run_id is None:
            return {}
        parent = await self.store.get_run(body.parent_run_id)
        if parent is None or parent.workflow_definition_id != workflow.id:
            raise NotFound(f"Parent run {body.parent_run_id!r} not found for this workflow")
        if parent.status not in TERMINAL_RUN_STATUSES:
            # A child of a run still going would run its steps beside it, reusing outputs
            # of a run whose outcome is not known yet. (A completed parent is allowed
            # here, unlike `…/retry`: the form names what it reuses and what runs again.)
            raise InvalidRequest(
                f"Parent run {parent.id!r} is {parent.status}; only a run that ended "
                "(completed, failed or cancelled) can be the parent of a retry"
            )
        known = {node.id for node in iter_nodes(workflow.nodes)}
        reusable = {node.id for node in reusable_steps(workflow.nodes)}
        for dep in body.resolved_dependencies:
            if dep.node_id not in known:
                raise InvalidRequest(
                    f"resolvedDependencies: node {dep.node_id!r} is not a node of this workflow"
                )
            if dep.resolution == "reuse_previous_output" and dep.node_id not in reusable:
                # Only a step runs once per run: a container's output is its children's,
                # and a step in a loop or map runs once per iteration or item.
                raise InvalidRequest(
                    f"resolvedDependencies: node {dep.node_id!r} cannot reuse a previous "
                    "output: only steps outside loops and maps can"
                )
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


def trigger_request(body: RunCreate, triggered_by: Identity | None) -> Asked:
    """What a trigger asks for: its whole body (and no node rerun), and who asks."""
    return {
        "triggeredBy": asker(triggered_by),
        "initialInput": body.initial_input,
        "triggerSource": body.trigger_source,
        "parentRunId": body.parent_run_id,
        "resolvedDependencies": [d.model_dump() for d in body.resolved_dependencies],
        "nodeId": None,
    }
