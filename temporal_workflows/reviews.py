"""Human review: open a gate, hold until a decision (or its timer), apply the reject policy.

`ask` is the one gate loop: every place a gate opens (before a step, a step's or a
router's output, a container's confirmation, a route selection, a loop iteration) goes
through it. See docs/hitl.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.clock import RunClock
    from temporal_workflows.contracts import RunInput
    from temporal_workflows.definition import HumanReview, WorkflowNode
    from temporal_workflows.gate_policy import (
        after_rejection,
        cancels_run,
        fails_run,
        rejection_outcome,
        retries_spent,
        takes_else_branch,
    )
    from temporal_workflows.gates import Decision, Requirement
    from temporal_workflows.open_gates import OpenGates
    from temporal_workflows.outcomes import (
        SKIPPED_BY_REVIEWER,
        NodeFailed,
        NodeSkipped,
        RunCancelled,
    )
    from temporal_workflows.read_model import BEFORE_RUN_REV, NodeRunStatus
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.run_status import Activity, Pause

# Runs cancelled while a pause held a decided gate left its step's node run
# awaiting_approval; on replay they still do. Closing it queues one more write, which
# can move where the outbox cuts a batch (FLUSH_AT_WRITES): a local activity more.
HELD_GATE_PATCH = "gate-held-by-a-pause-closes-on-cancel"
# A gate decided while the run was paused (by a person or by its timer) left its node run
# awaiting_approval until the run resumed; it now shows the node waiting to go on. One
# more write, which can move where the outbox cuts a batch (as for HELD_GATE_PATCH); the
# recorded histories replay without this guard too, so it is a precaution.
DECIDED_WHILE_PAUSED_PATCH = "gate-decided-while-paused-shows-its-node-decided"
# A container's gate decided while the run was not paused moved its node run to running
# after the decision's write, with no node event: a live stream showed it awaiting_approval
# until the container ended. Its `node_decided` now goes with the decision, paused or not,
# and stands for the write `ask` made after the gate. Record content only, but the write
# moves before the decision's flush (and a paused decision makes one write fewer), which can
# move where the outbox cuts a batch; the recorded histories (router_review_retried,
# loop_review_retried) replay without this guard too, so it is a precaution.
CONTAINER_DECIDED_PATCH = "container-gate-decision-logs-node-decided"
# A decision that cancels the run (a person's reject with onReject: cancel, a timer's
# onTimeout: cancel) made while the run was paused held it paused until resumed, and only
# then cancelled it. It now cancels at once: the gate's task raises instead of waiting for
# the resume, which ends the run (and its other branches) in that workflow task — new
# commands, so runs recorded before keep waiting (tests/histories/: rejected_ and
# timed_out_paused_cancelled fail to replay without this guard).
PAUSED_CANCEL_PATCH = "decision-cancelling-a-paused-run-cancels-at-once"
# The same for a decision that fails the run (a person's reject with onReject: retry, its
# retries spent, on a node whose onError is not skip): it held the paused run until
# resumed, and only then failed it. It now fails it at once — new commands, so runs
# recorded before keep waiting (tests/histories/rejected_paused_failed fails to replay
# without this guard).
PAUSED_FAIL_PATCH = "decision-failing-a-paused-run-fails-at-once"
# A form's decided requirement records the values the run goes on with (its defaults
# filled in). A decision made before it replays as recorded (userInput as sent): the
# run writes its whole audit trail again at each change, and a record changed after its
# decision (an upgrade's replay) is no audit trail.
FORM_VALUES_RECORDED_PATCH = "form-decision-records-the-values-used"
# A gate's retries spent after one retry said "rejected by reviewer after 1 retries" (the
# run's error summary, the node run's error); it says "after 1 retry" now. Runs that wrote
# it before replay as they ran (tests/histories/rejected_after_1_retries). Asked only when
# that text is written.
RETRY_WORDING_PATCH = "rejection-after-1-retry-singular"
# Builds the gate for the n-th time it opens (n = rejections retried so far).
RequirementFor = Callable[[int], Requirement]
# Runs the node again after a rejection the policy retries (a step, a loop iteration).
Redo = Callable[[Decision], Awaitable[None]]


def review_of(node: WorkflowNode) -> HumanReview | None:
    """The node's human review, when it asks for any."""
    review = node.human_review
    return review if review is not None and review.is_active() else None


@dataclass
class Reviews:
    inp: RunInput
    gates: OpenGates
    recorder: RunRecorder
    pause: Pause
    activity: Activity
    clock: RunClock

    async def ask(
        self,
        node: WorkflowNode,
        review: HumanReview,
        requirement: RequirementFor,
        *,
        node_run_id: Callable[[], str],
        rev: int,
        redo: Redo | None = None,
    ) -> Decision:
        """Open the gate until a decision the node goes on with; return it.

        A rejection is applied by the node's policy: `skip` raises NodeSkipped, `cancel`
        and exhausted retries raise; `retry` runs `redo` (when given) and opens the gate
        again. A condition's else_branch rejection is returned for the node to follow.
        """
        retry_count = 0
        while True:
            req = requirement(retry_count)
            req.retry_count = retry_count
            decision = await self.open(req, review, node, node_run_id(), rev)
            if node.node_type != "step" and not workflow.patched(CONTAINER_DECIDED_PATCH):
                # A container's node run stays open after its gate; a step's activity
                # writes its own.
                self.recorder.node(node_run_id(), node, "running", event=None)
            if decision.resolution != "reject" or takes_else_branch(review, decision):
                return decision
            singular = _one_retry_singular(review, decision, retry_count, node)
            try:
                verdict = after_rejection(review, decision, retry_count, node, singular)
            except RunCancelled as cancelled:
                if self._closes(node):
                    self.recorder.cancelled(node_run_id(), node, str(cancelled))
                raise
            except NodeFailed as failed:
                if self._closes(node):
                    self.recorder.failed(node_run_id(), node, failed.error)
                raise
            if verdict == "skip":
                raise NodeSkipped(_skipped_because(review, decision, retry_count, singular))
            retry_count += 1
            if redo is not None:
                if self._closes(node):
                    # The step runs again on a new node run; this one's gate is decided.
                    feedback = f": {decision.feedback}" if decision.feedback else ""
                    self.recorder.failed(node_run_id(), node, f"rejected by reviewer{feedback}")
                await redo(decision)

    def _closes(self, node: WorkflowNode) -> bool:
        """A rejected step's node run is closed here (a container's by the dispatcher)."""
        return self.inp.rejected_gates_close_node_runs and node.node_type == "step"

    async def open(
        self,
        req: Requirement,
        review: HumanReview,
        node: WorkflowNode,
        node_run_id: str,
        rev: int,
    ) -> Decision:
        """Hold at a gate until a decision arrives or its durable timer expires."""
        timeout = review.timeout_seconds or self.inp.default_gate_timeout_seconds
        req.node_run_id = node_run_id
        # Which loop iteration and map item it waits in: a map's items (one at a time
        # behind a gate) and a loop's iterations opened the same gate, and the approver
        # could not tell for which.
        if self.inp.deep_placement:
            placed = self.recorder.placement_of(node_run_id) or {}
            if req.iteration is None:
                req.iteration = placed.get("iteration")
            req.item_index = placed.get("item_index")
        req.created_at = self.clock.now()
        if timeout:
            deadline = workflow.now() + timedelta(seconds=timeout)
            req.timeout_at = deadline.isoformat().replace("+00:00", "Z")
        self.gates.add(req, review.user_input_schema)
        self.activity.show()
        shown: dict[str, Any] = {}
        if rev == BEFORE_RUN_REV:
            shown["started_at"] = self.clock.stamp()
        if req.is_post_execution:
            shown["output_snapshot"] = req.step_output
        self.recorder.node(
            node_run_id, node, "awaiting_approval", event="node_awaiting_approval", rev=rev, **shown
        )
        await self.recorder.publish("awaiting_approval", stepId=req.step_id, stepName=req.step_name)
        self.recorder.flush_soon()  # written while the gate waits
        try:
            decision = await self.gates.wait(req, timeout)
        except asyncio.CancelledError:
            self.recorder.cancelled(node_run_id, node, "cancelled while awaiting approval")
            raise
        fills_form = req.requires_user_input and decision.resolution != "reject"
        if fills_form and workflow.patched(FORM_VALUES_RECORDED_PATCH):
            self.gates.record(req, decision, self.clock.now(), review.user_input_schema)
        else:
            self.gates.record(req, decision, self.clock.now(), None)
        self.activity.show()
        if node.node_type != "step" and workflow.patched(CONTAINER_DECIDED_PATCH):
            # A container's node run is open again at once (its body goes on, at resume
            # when paused), and a live stream hears so before the decision's event.
            self.recorder.node(node_run_id, node, "running", event="node_decided", rev=rev)
        elif self.pause.paused and workflow.patched(DECIDED_WHILE_PAUSED_PATCH):
            # Nothing awaits approval now; the decision applies when the run resumes. A
            # step whose gate comes before it has not gone on (pending); one whose output
            # was reviewed ran, its output not yet accepted (running, as a container's
            # node run stays open: it showed pending, as if it had not run, before this).
            # `node_decided` tells a live stream so (record content, no command): without
            # it a client following node events showed awaiting_approval until the resume.
            before = node.node_type == "step" and not req.is_post_execution
            held: NodeRunStatus = "pending" if before else "running"
            self.recorder.node(node_run_id, node, held, event="node_decided", rev=rev)
        await self.recorder.publish(
            "requirement_resolved",
            stepId=req.step_id,
            resolution=decision.resolution,
            decidedBy=decision.decided_by,
            source=decision.source,
        )
        # Written before the decision's answer leaves, not handed to the next step: an
        # answered gate must not stay listed as pending while that step waits for a slot.
        self.recorder.flush_in_this_task()
        if self.pause.paused and ends_run_at_once(review, decision, req.retry_count, node):
            return decision  # `ask` cancels or fails the run now: a resume may never come
        try:
            await self.pause.hold()
        except asyncio.CancelledError:
            # Decided while paused, then cancelled before the run resumed. A container's
            # node run is closed by the dispatcher; nothing else closes a step's.
            if node.node_type == "step" and workflow.patched(HELD_GATE_PATCH):
                self.recorder.cancelled(node_run_id, node, "cancelled while paused")
            raise
        return decision


def ends_run_at_once(
    review: HumanReview, decision: Decision, retry_count: int, node: WorkflowNode
) -> bool:
    """A decision made while paused that cancels or fails the run, and does so at once.

    The guards are asked only for such a decision (each records its marker when asked).
    """
    if cancels_run(review, decision):
        return workflow.patched(PAUSED_CANCEL_PATCH)
    if fails_run(review, decision, retry_count, node):
        return workflow.patched(PAUSED_FAIL_PATCH)
    return False


def _one_retry_singular(
    review: HumanReview, decision: Decision, retry_count: int, node: WorkflowNode
) -> bool:
    """Whether a rejection's text may say "1 retry" (RETRY_WORDING_PATCH), asked only
    when it writes that text: other runs get no marker."""
    if retry_count != 1 or decision.is_timeout:
        return True
    spent = rejection_outcome(review, decision, retry_count, node) in ("fail", "skip")
    return not spent or workflow.patched(RETRY_WORDING_PATCH)


def _skipped_because(
    review: HumanReview, decision: Decision, retry_count: int, singular: bool
) -> str:
    """The skipped node run's error: who or what skipped it (a timer is no reviewer)."""
    if decision.is_timeout:
        return "skipped: the gate timed out (onTimeout: skip)"
    if review.on_reject == "retry":  # the retries ran out, and the step's onError is skip
        feedback = f": {decision.feedback}" if decision.feedback else ""
        return f"{retries_spent(retry_count, singular)}{feedback}; skipped (onError: skip)"
    return SKIPPED_BY_REVIEWER
