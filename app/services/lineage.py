"""Runs that beget runs: retry, single-node rerun and replay (contract 7, 13, 14).

Each builds a child run record linked by `parentRunId` and starts it through the one
start path (`RunStarter.start`); outputs reused from the parent are passed to the workflow as
data (`RunInput.cached_outputs`), never re-read by the workflow. Under an `Idempotency-Key`
a repeat is answered with the child its first use created, as a trigger's is
(app/services/idempotency.py): a lost answer repeated must not start a second child.
"""

from __future__ import annotations

from dataclasses import dataclass

from activities.run_start import RunStarter, new_run_record, require_enabled
from activities.store.base import Store
from activities.store.node_run_pages import node_run_pages
from activities.store.records import (
    NodeRunRecord,
    ResolvedDependency,
    RunRecord,
    WorkflowRecord,
)
from app.errors import InvalidRequest, NotFound
from app.services.graph import latest_node_runs
from app.services.idempotency import Asked, asker, repeated_run, start_first_use
from temporal_workflows.contracts import CachedOutput, Identity
from temporal_workflows.definition import WorkflowNode, iter_nodes

RETRYABLE = frozenset({"failed", "cancelled"})
RERUNNABLE = frozenset({"completed", "failed"})
NESTED_MESSAGE = "Nested node rerun is not supported."
# Containers that run their children more than once, each time on other data.
REPEATING = frozenset({"loop", "map"})


@dataclass
class LineageService:
    store: Store
    starter: RunStarter
    # Who asks for the child run (recorded with it, carried into its workflow).
    triggered_by: Identity | None = None

    async def retry(
        self, workflow: WorkflowRecord, source: RunRecord, idempotency_key: str | None = None
    ) -> RunRecord:
        """A child on the source's snapshot reusing every completed step, rerunning the rest.

        A node rerun's child is retried as it was asked for: up to its node, never further.
        """
        stop = source.stop_after_node_id
        asked = lineage_request("retry", source, stop, self.triggered_by)
        repeat = await repeated_run(self.starter, workflow, idempotency_key, asked)
        if repeat is not None:
            return repeat
        require_enabled(workflow)
        if source.status not in RETRYABLE:
            raise InvalidRequest(
                f"Run {source.id!r} is {source.status}; only a failed or cancelled run "
                "can be retried"
            )
        cached, deps = await self._reuse(source, up_to(source.definition_snapshot.nodes, stop))
        record = child_record(
            workflow, source, "retry", deps, key=idempotency_key, triggered_by=self.triggered_by
        )
        return await start_first_use(
            self.starter, workflow, record, asked, cached=cached, stop_after_node_id=stop
        )

    async def rerun_node(
        self,
        workflow: WorkflowRecord,
        source: RunRecord,
        node_id: str,
        idempotency_key: str | None = None,
    ) -> RunRecord:
        """A child that replays the nodes before `node_id` from cache, runs it, and stops."""
        asked = lineage_request("node_rerun", source, node_id, self.triggered_by)
        repeat = await repeated_run(self.starter, workflow, idempotency_key, asked)
        if repeat is not None:
            return repeat
        require_enabled(workflow)
        top = source.definition_snapshot.nodes
        index = next((i for i, n in enumerate(top) if n.id == node_id), None)
        if index is None:
            if any(n.id == node_id for n in iter_nodes(top)):
                raise InvalidRequest(NESTED_MESSAGE)
            raise NotFound(f"Node {node_id!r} not found in run {source.id!r}")
        target = top[index]
        if target.node_type != "step":
            raise InvalidRequest(
                f"Only step nodes can be rerun; node {node_id!r} is a {target.node_type}"
            )
        if source.status not in RERUNNABLE:
            raise InvalidRequest(
                f"Run {source.id!r} is {source.status}; a node can be rerun only from a "
                "completed or failed run"
            )
        cached, deps = await self._reuse(source, top[:index])
        deps.append(ResolvedDependency(node_id=node_id, resolution="rerun"))
        record = child_record(
            workflow,
            source,
            "node_rerun",
            deps,
            key=idempotency_key,
            triggered_by=self.triggered_by,
        )
        return await start_first_use(
            self.starter, workflow, record, asked, cached=cached, stop_after_node_id=node_id
        )

    async def replay(
        self, workflow: WorkflowRecord, source: RunRecord, idempotency_key: str | None = None
    ) -> RunRecord:
        """A fresh child on the live definition with the source's initial input."""
        asked = lineage_request("replay", source, None, self.triggered_by)
        repeat = await repeated_run(self.starter, workflow, idempotency_key, asked)
        if repeat is not None:
            return repeat
        require_enabled(workflow)
        record = child_record(
            workflow,
            source,
            "replay",
            pinned=False,
            key=idempotency_key,
            triggered_by=self.triggered_by,
        )
        return await start_first_use(self.starter, workflow, record, asked)

    async def _latest_completed(self, run_id: str) -> dict[str, NodeRunRecord]:
        """Per node id, the run's latest completed node run, read a page at a time and
        kept only while it is the latest (a wide run's node runs can be gigabytes)."""
        latest: dict[str, NodeRunRecord] = {}
        async for page in node_run_pages(self.store, run_id):
            latest = latest_completed([*latest.values(), *page])
        return latest

    async def _reuse(
        self, source: RunRecord, nodes: list[WorkflowNode]
    ) -> tuple[dict[str, CachedOutput], list[ResolvedDependency]]:
        """Cached outputs and the dependency list of every step of `nodes`, in document
        order: reused where it may be (`reusable_steps`) and completed, else rerun."""
        latest = await self._latest_completed(source.id)
        reusable = {step.node_id for step in reusable_steps(nodes)}
        cached: dict[str, CachedOutput] = {}
        deps: list[ResolvedDependency] = []
        for step in (node for node in iter_nodes(nodes) if node.node_type == "step"):
            done = latest.get(step.node_id) if step.node_id in reusable else None
            if done is None:
                deps.append(ResolvedDependency(node_id=step.node_id, resolution="rerun"))
                continue
            cached[step.node_id] = CachedOutput(
                source_node_run_id=done.id, output=done.output_snapshot
            )
            deps.append(
                ResolvedDependency(
                    node_id=step.node_id,
                    resolution="reuse_previous_output",
                    source_node_run_id=done.id,
                )
            )
        return cached, deps


def up_to(nodes: list[WorkflowNode], node_id: str | None) -> list[WorkflowNode]:
    """The top-level nodes up to and including `node_id` (a rerun's target), or all."""
    ids = [n.id for n in nodes]
    return nodes[: ids.index(node_id) + 1] if node_id in ids else nodes


def reusable_steps(nodes: list[WorkflowNode]) -> list[WorkflowNode]:
    """Step nodes whose single output can stand in for a new execution.

    Steps inside loops and maps are left out: those run them once per iteration or item
    with different inputs, and a cache holds one output per node (it would stand in for
    every item alike).
    """
    out: list[WorkflowNode] = []
    for node in nodes:
        if node.node_type == "step":
            out.append(node)
        elif node.node_type not in REPEATING:
            for _, seq in node.child_sequences():
                out.extend(reusable_steps(seq))
    return out


def latest_completed(node_runs: list[NodeRunRecord]) -> dict[str, NodeRunRecord]:
    """Per node id, its completed node run with the highest counter."""
    return latest_node_runs([n for n in node_runs if n.status == "completed"])


def lineage_request(
    trigger: str, source: RunRecord, node_id: str | None, triggered_by: Identity | None
) -> Asked:
    """What a lineage request asks for: its kind, its source run, (rerun) its node, and
    who asks."""
    return {
        "triggerSource": trigger,
        "parentRunId": source.id,
        "nodeId": node_id,
        "triggeredBy": asker(triggered_by),
    }


def child_record(
    workflow: WorkflowRecord,
    source: RunRecord,
    trigger: str,
    deps: list[ResolvedDependency] | None = None,
    *,
    pinned: bool = True,
    key: str | None = None,
    triggered_by: Identity | None = None,
) -> RunRecord:
    """A child of `source` with its input: on its definition snapshot, or (replay) the live one."""
    return new_run_record(
        workflow,
        trigger,
        source.initial_input,
        pinned_to=source if pinned else None,
        parent_run_id=source.id,
        resolved_dependencies=deps,
        idempotency_key=key,
        triggered_by=triggered_by,
    )
