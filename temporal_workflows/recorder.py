"""The run's read model as the workflow writes it: run status, node runs, the event log.

Every write is queued in the outbox (see `outbox.py`); shapes and revisions follow the
protocol in `read_model.py`.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import stop_reasons
    from temporal_workflows.clock import RunClock
    from temporal_workflows.contracts import (
        NodeRunProjection,
        ProjectionBatch,
        RunInput,
        RunProjection,
    )
    from temporal_workflows.definition import WorkflowNode
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outbox import Outbox
    from temporal_workflows.outcomes import NodeSkipped
    from temporal_workflows.placement import Placement
    from temporal_workflows.read_model import (
        FINAL_REV,
        OPEN_NODE_STATUSES,
        OPEN_REV,
        NodeRunStatus,
        node_event,
        node_record,
        node_run_id,
        run_event,
    )
    from temporal_workflows.run_status import Activity, Pause
    from temporal_workflows.status_attribute import StatusAttribute


class RunRecorder:
    def __init__(
        self,
        inp: RunInput,
        outbox: Outbox,
        clock: RunClock,
        gates: OpenGates,
        pause: Pause,
        activity: Activity,
        status_attribute: StatusAttribute,
    ) -> None:
        self._inp = inp
        self._outbox = outbox
        self._status_attribute = status_attribute
        self._clock = clock
        self._gates = gates
        self._pause = pause
        self._activity = activity
        self.rev = 0
        self.status = "pending"
        # Node runs per node id so far (carried across continue-as-new).
        self.node_counts: dict[str, int] = {}
        # Where each node run inside a container sits (see placement.py), by its id.
        self._placements: dict[str, dict[str, Any]] = {}

    async def publish(
        self,
        event: str,
        *,
        status: str | None = None,
        changes: dict[str, Any] | None = None,
        wait: bool = False,
        **details: Any,
    ) -> None:
        """Queue the run's status, gates and audit trail, with an event for the live stream.

        With `wait`, return only once it is in the store (update handlers answer after it).
        """
        status = status or self._activity.live_status()
        self._status_attribute.set(status)
        self.status = status
        self.rev += 1
        fields = {
            "status": status,
            "pending_requirements": [r.model_dump(mode="json") for r in self._gates.open.values()],
            "resolved_requirements": [r.model_dump(mode="json") for r in self._gates.resolved],
            "paused_at": self._pause.paused_at,
            **(changes or {}),
        }
        self._outbox.add_run(
            RunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                rev=self.rev,
                changes=fields,
                event=run_event(
                    event,
                    run_id=self._inp.run_id,
                    status=status,
                    timestamp=self._clock.event_time(),
                    **details,
                ),
            )
        )
        if wait:
            await self._outbox.drain()

    def settle_status(self) -> None:
        """Show the run's status in its search attribute now (it returns or continues)."""
        self._status_attribute.settle()

    async def write_backlog(self) -> None:
        """When a full batch is queued, wait until it is written. The local activity that
        writes it ends the workflow activation: CPU-bound work queued between two such
        points (inline steps) is split over activations, each well inside the 2 s the
        SDK allows one before it reports the workflow deadlocked."""
        if self._outbox.backlogged():
            await self._outbox.drain()

    async def write_queued(self) -> None:
        """Wait until everything queued is written (its local activity ends the activation)."""
        await self._outbox.drain()

    def flush_soon(self) -> None:
        """Write what is queued beside whatever the run does next (it is about to block)."""
        self._outbox.request_flush()

    def flush_in_this_task(self) -> None:
        """Write what is queued before this task's answers leave (see the outbox)."""
        self._outbox.flush_in_this_task()

    def hand_off(self) -> ProjectionBatch | None:
        """What is queued, for the step about to start to write first (see the outbox)."""
        return self._outbox.hand_off()

    def handed_unconfirmed(self) -> ProjectionBatch | None:
        """What a step was handed and has not yet reported written (see the outbox)."""
        return self._outbox.handed

    def handed_written(self, handed: ProjectionBatch) -> None:
        self._outbox.confirm(handed)

    def next_node_run_id(self, node: WorkflowNode, placement: Placement | None) -> str:
        count = self.node_counts.get(node.node_id, 0) + 1
        self.node_counts[node.node_id] = count
        new_id = node_run_id(self._inp.run_id, node.node_id, count)
        self.place(new_id, placement)
        return new_id

    def place(self, node_run_id: str, placement: Placement | None) -> None:
        """Every write of this node run shows where it sits (nothing for a top-level one)."""
        if placement is not None:
            self._placements[node_run_id] = placement.fields()

    def placement_of(self, node_run_id: str) -> dict[str, Any] | None:
        return self._placements.get(node_run_id)

    def node(
        self,
        node_run_id: str,
        node: WorkflowNode,
        status: NodeRunStatus,
        *,
        event: str | None,
        events: list[dict[str, Any]] | None = None,
        rev: int | None = None,
        **fields: Any,
    ) -> None:
        """Queue node-run fields with their events (`event` names the one usual event)."""
        if events is None:
            events = [] if event is None else [self.node_event(event, node_run_id, node, status)]
        if rev is None:
            rev = OPEN_REV if status in ("running", "awaiting_approval") else FINAL_REV
        record = node_record(
            run_id=self._inp.run_id,
            node_run_id=node_run_id,
            node_id=node.node_id,
            node_name=node.name,
            node_type=node.node_type,
            status=status,
            rev=rev,
            **{**self._placements.get(node_run_id, {}), **fields},
        )
        self._outbox.add_node(
            NodeRunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                record=record,
                events=events,
            ),
            settled=settled(node, status, rev),
        )

    def cancelled(
        self, node_run_id: str, node: WorkflowNode, error: str | None = None, **fields: Any
    ) -> None:
        """The node run ended by a cancel; `error` None: `cancelled`, and why when a
        sibling's failure caused it (stop_reasons.py)."""
        if error is None:
            error = stop_reasons.cancelled_because()
        self.node(
            node_run_id,
            node,
            "cancelled",
            event="node_cancelled",
            finished_at=self._clock.stamp(),
            error=error,
            **fields,
        )

    def failed(self, node_run_id: str, node: WorkflowNode, error: str, **fields: Any) -> None:
        self.node(
            node_run_id,
            node,
            "failed",
            event=None,
            events=self._end_events("node_failed", node_run_id, node, "failed", fields),
            finished_at=self._clock.stamp(),
            error=error,
            **fields,
        )

    def skipped(self, node_run_id: str, node: WorkflowNode, skipped: NodeSkipped) -> None:
        fields = skipped.fields
        self.node(
            node_run_id,
            node,
            "skipped",
            event=None,
            events=self._end_events("node_skipped", node_run_id, node, "skipped", fields),
            finished_at=self._clock.stamp(),
            error=skipped.error,
            # A skipped node outputs nothing: an output review rejected with skip left
            # the rejected output on it.
            **{"output_snapshot": None, **fields},
        )

    def _end_events(
        self,
        event: str,
        node_run_id: str,
        node: WorkflowNode,
        status: str,
        fields: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """The end event; led by `node_started` when the step started and ended right here
        (a template or an inline built-in failed), so every ended step shows its start."""
        started, attempt = fields.get("started_at"), fields.get("attempt")
        events = []
        if started is not None:
            events.append(
                self.node_event("node_started", node_run_id, node, "running", started, attempt)
            )
        return [*events, self.node_event(event, node_run_id, node, status, attempt=attempt)]

    def node_event(
        self,
        event: str,
        node_run_id: str,
        node: WorkflowNode,
        status: str,
        timestamp: str | None = None,
        attempt: int | None = None,
    ) -> dict[str, Any]:
        """`attempt`: a step's that started and ended in the workflow (a remote step's
        attempt logs its own events), only in runs started with inline_events_attempt."""
        numbered = attempt is not None and self._inp.inline_events_attempt
        return node_event(
            event,
            run_id=self._inp.run_id,
            node_run_id=node_run_id,
            node_id=node.node_id,
            node_name=node.name,
            status=status,
            timestamp=timestamp or self._clock.event_time(),
            **({"attempt": attempt} if numbered else {}),
        )


def settled(node: WorkflowNode, status: NodeRunStatus, rev: int) -> bool:
    """Nothing the run writes of this node run later shares this write's rev: a write
    that closes it (later ones, a review's, are higher), or a container's start when it has
    no gate (its gates write at the same rev, OPEN_REV)."""
    if status not in OPEN_NODE_STATUSES:
        return True
    review = node.human_review
    return (
        status == "running"
        and rev == OPEN_REV
        and node.node_type != "step"
        and (review is None or not review.is_active())
    )
