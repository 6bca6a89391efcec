"""The interpreter's state and its outward effects: read-model writes, gates, pause holds.

Split from the node logic (`nodes.py`) and the Temporal entry points (`interpreter.py`).
Everything here is deterministic: time is `workflow.now()`, ids are counters.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import search_attributes
    from temporal_workflows.contracts import (
        RECORD_BATCH,
        LoopResume,
        NodeRunProjection,
        ProjectionBatch,
        ResumePoint,
        RunInput,
        RunProjection,
    )
    from temporal_workflows.definition import HumanReview, UserInputField, WorkflowNode
    from temporal_workflows.gates import Decision, Requirement
    from temporal_workflows.scope import Scope

PROJECTION_TIMEOUT = timedelta(seconds=30)
# The outbox is written when the run blocks, or at this many writes, or when its oldest
# write is this old (by the steps' clock).
FLUSH_AT_WRITES = 200
FLUSH_AFTER = timedelta(milliseconds=500)
# History events an operation adds, for the history budget (a marker; schedule/start/
# complete plus a workflow task).
LOCAL_ACTIVITY_EVENTS = 1
ACTIVITY_EVENTS = 6
# Workflow-side node-run writes outrank any write an activity attempt makes; a gate
# opened before a step runs writes the lowest rev, so the step's own writes win.
FINAL_REV = 1_000_000_000
OPEN_REV = FINAL_REV - 1
REVIEW_REV = FINAL_REV - 2
BEFORE_RUN_REV = 0


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


class RunRuntime:
    def __init__(self) -> None:
        self._rev = 0
        # An estimate of this run's history length: local activities run inside one
        # workflow task, so the server's count lags far behind while they do.
        self._events = 3
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
        # Read-model writes not yet sent, in order ("r"/"n" per write), and counters.
        self._outbox_runs: list[RunProjection] = []
        self._outbox_nodes: list[NodeRunProjection] = []
        self._order = ""
        self._clock: datetime | None = None
        self._oldest_queued: datetime | None = None
        self._want_flush = False
        self._closing = False
        self._flusher: asyncio.Task[None]
        # The top-level node running now (continue-as-new happens only between those).
        self._top_index = 0
        self._top_node_id: str | None = None
        self._loop_resume: LoopResume | None = None
        self._queued = 0
        self._flushed = 0

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

    # -- the outbox: read-model writes, batched off the critical path ---------

    def _enqueued(self, kind: str) -> None:
        if not self._order:
            self._oldest_queued = self._clock
        self._order += kind
        self._queued += 1

    def _flush_due(self) -> bool:
        if not self._order:
            return False
        if self._want_flush or len(self._order) >= FLUSH_AT_WRITES:
            return True
        # A long chain of quick local steps still shows up within FLUSH_AFTER.
        oldest, latest = self._oldest_queued, self._clock
        return oldest is not None and latest is not None and latest - oldest > FLUSH_AFTER

    async def _flush_forever(self) -> None:
        """Write what the run queued, in order, one local activity per batch.

        Writes wait in the outbox until the run is about to block (a remote step, a gate,
        a pause, the end of a parallel branch or of the run), until many have queued, or
        until they are FLUSH_AFTER old; a run of quick steps then costs one write, not one
        per step.
        """
        while True:
            await workflow.wait_condition(lambda: self._closing or self._flush_due())
            if self._closing:
                return
            await self._write_outbox()

    async def _write_outbox(self) -> None:
        """Write everything queued now as one batch, in order."""
        batch = ProjectionBatch(
            runs=self._outbox_runs, node_runs=self._outbox_nodes, order=self._order
        )
        upto = self._queued
        self._outbox_runs, self._outbox_nodes, self._order = [], [], ""
        self._want_flush = False
        self._events += LOCAL_ACTIVITY_EVENTS
        await workflow.execute_local_activity(
            RECORD_BATCH, batch, start_to_close_timeout=PROJECTION_TIMEOUT
        )
        self._flushed = upto

    async def _close_outbox(self, flusher: asyncio.Task[None]) -> None:
        """Stop the flusher (after the batch it is writing) and write the rest inline.

        Nothing may schedule a local activity once the run returns: completing the
        workflow must be its last command.
        """
        self._closing = True
        await flusher
        if self._order:
            await self._write_outbox()

    def _request_flush(self) -> None:
        """Write the outbox now, beside whatever the run does next (it is about to block)."""
        if self._order:
            self._want_flush = True

    async def _drain(self) -> None:
        """Write everything queued so far before going on (the run is about to block)."""
        target = self._queued
        if self._flushed < target:
            self._want_flush = True
            await workflow.wait_condition(lambda: self._flushed >= target)

    def _now(self) -> str:
        return workflow.now().isoformat().replace("+00:00", "Z")

    def _stamp(self) -> str:
        """A timestamp for a record the workflow writes, never before one already seen.

        workflow.now() is the workflow task's start; steps run (as local activities)
        after it, so a container recorded after a step would sort before it. Taking the
        later of the two, plus a microsecond, keeps every record in causal order.
        """
        now = workflow.now()
        if self._clock is not None and now <= self._clock:
            now = self._clock + timedelta(microseconds=1)
        self._clock = now
        return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def _observe(self, timestamp: str | None) -> None:
        """Note a time a step reported (recorded in history, so replay sees the same)."""
        if timestamp:
            seen = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
            if self._clock is None or seen > self._clock:
                self._clock = seen

    # -- node runs ----------------------------------------------------------

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
        rev: int | None = None,
        **fields: Any,
    ) -> None:
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
                events=[]
                if event is None
                else [self._node_event(event, node_run_id, node, status)],
            )
        )
        self._enqueued("n")

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
        await self._record_node(
            node_run_id,
            node,
            "awaiting_approval",
            event="node_awaiting_approval",
            rev=rev,
            **({"started_at": self._stamp()} if rev == BEFORE_RUN_REV else {}),
            **({"output_snapshot": req.step_output} if req.is_post_execution else {}),
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
            await self._record_node(
                node_run_id,
                node,
                "cancelled",
                event="node_cancelled",
                finished_at=self._stamp(),
                error="cancelled while awaiting approval",
            )
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


def on_timeout_action(decision: Decision, req_on_timeout: str) -> str | None:
    """For a timeout decision: 'skip' or 'cancel' (None when it approved or was a person)."""
    if decision.decided_by != "timeout" or req_on_timeout == "approve":
        return None
    return req_on_timeout


async def cancel_tasks(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
