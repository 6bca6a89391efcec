"""The interpreter's state and its effects: node-run records, gates, pauses, continue-as-new.

Split from the node logic (`nodes.py`) and the Temporal entry points (`interpreter.py`).
Everything here is deterministic: time is `workflow.now()`, ids are counters.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import search_attributes
    from temporal_workflows.contracts import (
        LoopResume,
        NodeRunProjection,
        ResumePoint,
        RunInput,
        RunProjection,
    )
    from temporal_workflows.definition import HumanReview, UserInputField, WorkflowNode
    from temporal_workflows.gates import Decision, Requirement
    from temporal_workflows.outbox import (
        RunOutbox,
    )
    from temporal_workflows.read_model import (
        BEFORE_RUN_REV,
        FINAL_REV,
        OPEN_REV,
    )
    from temporal_workflows.scope import Scope


class RunStopped(Exception):
    """Ends the run early: parallel siblings are cancelled, the run records why."""


class NodeFailed(RunStopped):
    """A node failed under policy `fail`: the run fails with this summary."""

    def __init__(self, node_name: str, error: str) -> None:
        super().__init__(f"Node '{node_name}' failed: {error}")
        self.node_name = node_name
        self.error = error


class RunCancelled(RunStopped):
    """A reviewer's reject or a gate's timeout asked to cancel the run."""


class NodeSkipped(Exception):
    """A gate decided to skip the node it guards."""


class RunRuntime(RunOutbox):
    def __init__(self) -> None:
        super().__init__()
        self._rev = 0
        self._status = "pending"
        self._node_counts: dict[str, int] = {}
        # node_run_id -> node name, in start order (dicts keep insertion order).
        self._active: dict[str, str] = {}
        self._paused = False
        self._paused_at: str | None = None
        # Open gates by step id, the decisions that arrived for them, the audit trail.
        self._gates: dict[str, Requirement] = {}
        self._schemas: dict[str, list[UserInputField]] = {}
        self._decisions: dict[str, Decision] = {}
        self._resolved: list[Requirement] = []
        self._inp: RunInput
        # The top-level node running now (continue-as-new happens only between those).
        self._top_index = 0
        self._top_node_id: str | None = None
        self._loop_resume: LoopResume | None = None

    # -- status and the run record ----------------------------------------

    def _live_status(self) -> str:
        if self._paused:
            return "paused"
        return "awaiting_approval" if self._gates else "running"

    async def _publish(
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
        status = status or self._live_status()
        if status != self._status:
            workflow.upsert_search_attributes([search_attributes.RUN_STATUS.value_set(status)])
        self._status = status
        self._rev += 1
        fields = {
            "status": status,
            "pending_requirements": [r.model_dump(mode="json") for r in self._gates.values()],
            "resolved_requirements": [r.model_dump(mode="json") for r in self._resolved],
            "paused_at": self._paused_at,
            **(changes or {}),
        }
        self._outbox_runs.append(
            RunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                rev=self._rev,
                changes=fields,
                event={
                    "type": event,
                    "runId": self._inp.run_id,
                    "status": status,
                    "timestamp": self._now(),
                    **details,
                },
            )
        )
        self._enqueued("r")
        if wait:
            await self._drain()

    def _next_node_run_id(self, node: WorkflowNode) -> str:
        count = self._node_counts.get(node.node_id, 0) + 1
        self._node_counts[node.node_id] = count
        return f"{self._inp.run_id}.{node.node_id}.{count}"

    def _enter(self, node_run_id: str, name: str) -> None:
        self._active[node_run_id] = name
        self._show_details()

    def _leave(self, node_run_id: str) -> None:
        self._active.pop(node_run_id, None)
        self._show_details()

    def _show_details(self) -> None:
        names = list(dict.fromkeys(self._active.values()))
        waiting = [r.step_name or r.step_id for r in self._gates.values()]
        parts = []
        if names:
            parts.append(f"Running: {', '.join(names)}")
        if waiting:
            parts.append(f"Waiting for approval at: {', '.join(waiting)}")
        if self._paused:
            parts.append("Paused")
        workflow.set_current_details("; ".join(parts))

    async def _record_node(
        self,
        node_run_id: str,
        node: WorkflowNode,
        status: str,
        *,
        event: str | None,
        events: list[dict[str, Any]] | None = None,
        rev: int | None = None,
        **fields: Any,
    ) -> None:
        """Queue node-run fields with their events (`event` names the one usual event)."""
        if events is None:
            events = [] if event is None else [self._node_event(event, node_run_id, node, status)]
        if rev is None:
            rev = OPEN_REV if status in ("running", "awaiting_approval") else FINAL_REV
        record = {
            "id": node_run_id,
            "workflow_run_id": self._inp.run_id,
            "node_id": node.node_id,
            "node_name": node.name,
            "node_type": node.node_type,
            "status": status,
            "rev": rev,
            **fields,
        }
        self._outbox_nodes.append(
            NodeRunProjection(
                run_id=self._inp.run_id,
                workflow_id=self._inp.workflow_id,
                record=record,
                events=events,
            )
        )
        self._enqueued("n")

    async def _cancelled(
        self, node_run_id: str, node: WorkflowNode, error: str = "cancelled"
    ) -> None:
        await self._record_node(
            node_run_id,
            node,
            "cancelled",
            event="node_cancelled",
            finished_at=self._stamp(),
            error=error,
        )

    def _node_event(
        self,
        event: str,
        node_run_id: str,
        node: WorkflowNode,
        status: str,
        timestamp: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        return {
            "type": event,
            "runId": self._inp.run_id,
            "nodeRunId": node_run_id,
            "nodeId": node.node_id,
            "nodeName": node.name,
            "status": status,
            "timestamp": timestamp or self._now(),
            **extra,
        }

    # -- continue-as-new ----------------------------------------------------

    async def _continue_as_new_if_due(
        self, index: int, scope: Scope, loop: LoopResume | None = None
    ) -> None:
        """Start a fresh history for this run when the current one has grown long.

        Only at a top-level boundary with no gate open and not paused; the position, the
        data, node-run counters and the audit trail are carried in the new input.
        """
        grown = self._events >= self._inp.continue_as_new_after_events
        if not (grown or workflow.info().is_continue_as_new_suggested()):
            return
        if self._gates or self._paused:
            return
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._close_outbox(self._flusher)
        previous = self._inp.resume.generation if self._inp.resume else 0
        point = ResumePoint(
            next_index=index,
            loop=loop,
            session_state=scope.session_state,
            previous_step_content=scope.previous_step_content,
            previous_step_outputs=scope.previous_step_outputs,
            node_counts=self._node_counts,
            resolved_requirements=[r.model_dump(mode="json") for r in self._resolved],
            rev=self._rev,
            generation=previous + 1,
        )
        workflow.continue_as_new(self._inp.model_copy(update={"resume": point}))

    def _restore(self, scope: Scope) -> None:
        """Take over the state an earlier execution of this run carried across."""
        point = self._inp.resume
        if point is None:
            return
        self._rev = point.rev
        self._status = "running"
        self._node_counts = dict(point.node_counts)
        self._resolved = [Requirement.model_validate(r) for r in point.resolved_requirements]
        self._loop_resume = point.loop
        scope.session_state.update(point.session_state)
        scope.previous_step_content = point.previous_step_content
        scope.previous_step_outputs.update(point.previous_step_outputs)

    # -- pause and gates ------------------------------------------------------

    async def _hold_if_paused(self) -> None:
        """A paused run starts no new node; it continues once resumed."""
        if self._paused:
            self._request_flush()
            await workflow.wait_condition(lambda: not self._paused)

    async def _open_gate(
        self,
        req: Requirement,
        review: HumanReview,
        node: WorkflowNode,
        node_run_id: str,
        rev: int,
    ) -> Decision:
        """Hold at a gate until a decision arrives or its durable timer expires."""
        timeout = review.timeout_seconds or self._inp.default_gate_timeout_seconds
        req.node_run_id = node_run_id
        req.created_at = self._now()
        if timeout:
            req.timeout_at = (
                (workflow.now() + timedelta(seconds=timeout)).isoformat().replace("+00:00", "Z")
            )
        step_id = req.step_id
        self._gates[step_id] = req
        self._schemas[step_id] = review.user_input_schema
        self._show_details()
        shown: dict[str, Any] = {}
        if rev == BEFORE_RUN_REV:
            shown["started_at"] = self._stamp()
        if req.is_post_execution:
            shown["output_snapshot"] = req.step_output
        await self._record_node(
            node_run_id, node, "awaiting_approval", event="node_awaiting_approval", rev=rev, **shown
        )
        await self._publish("awaiting_approval", stepId=step_id, stepName=req.step_name)
        self._request_flush()  # written while the gate waits
        try:
            if timeout:
                await workflow.wait_condition(
                    lambda: step_id in self._decisions, timeout=timedelta(seconds=timeout)
                )
            else:
                await workflow.wait_condition(lambda: step_id in self._decisions)
        except TimeoutError:
            self._decisions[step_id] = _timeout_decision(req)
        except asyncio.CancelledError:
            self._gates.pop(step_id, None)
            self._schemas.pop(step_id, None)
            await self._cancelled(node_run_id, node, "cancelled while awaiting approval")
            raise
        decision = self._decisions.pop(step_id)
        del self._gates[step_id]
        self._schemas.pop(step_id, None)
        self._resolved.append(_resolved(req, decision, self._now()))
        self._show_details()
        await self._publish(
            "requirement_resolved",
            stepId=step_id,
            resolution=decision.resolution,
            decidedBy=decision.decided_by,
        )
        await self._hold_if_paused()
        return decision


def _timeout_decision(req: Requirement) -> Decision:
    """What `onTimeout` does, recorded as a decision by "timeout"."""
    if req.on_timeout == "approve":
        return Decision(step_id=req.step_id, resolution="confirm", decided_by="timeout")
    return Decision(
        step_id=req.step_id,
        resolution="reject",
        decided_by="timeout",
        feedback=f"timed out: {req.on_timeout}",
    )


def _resolved(req: Requirement, decision: Decision, now: str) -> Requirement:
    done = req.model_copy()
    done.resolution = decision.resolution
    done.decided_by = decision.decided_by
    done.decided_at = now
    done.confirmed = decision.resolution != "reject"
    done.rejection_feedback = decision.feedback if decision.resolution == "reject" else None
    if decision.resolution == "edit":
        done.edited_output = decision.edited_output
    done.user_input = decision.user_input
    done.selected_choices = decision.selected_choices
    if decision.decided_by == "timeout":
        done.resolution = f"timeout:{req.on_timeout}"
    return done


async def cancel_tasks(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
