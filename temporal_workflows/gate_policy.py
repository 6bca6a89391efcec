"""What a gate's decision does: the timer's decision, the audit record, the reject policy.

Pure functions over the gate models (`gates.py`); the interpreter applies them.
"""

from __future__ import annotations

from typing import Any, Literal

from temporal_workflows.definition import HumanReview, StepConfig, UserInputField, WorkflowNode
from temporal_workflows.gates import Decision, GateError, Requirement, collect_input
from temporal_workflows.outcomes import NodeFailed, RunCancelled


def timeout_decision(req: Requirement) -> Decision:
    """What `onTimeout` does, recorded as a decision by the timer."""
    if req.on_timeout == "approve":
        return Decision(step_id=req.step_id, resolution="confirm", source="timeout")
    return Decision(
        step_id=req.step_id,
        resolution="reject",
        source="timeout",
        feedback=f"timed out: {req.on_timeout}",
    )


def resolved(
    req: Requirement, decision: Decision, now: str, schema: list[UserInputField] | None
) -> Requirement:
    """The requirement as the audit trail keeps it: with its decision, who made it, when,
    and, given the form's `schema`, its values as the run goes on with them (defaults
    filled in: a `confirm`'s or a timer's approve is recorded with the values it
    accepted); without one, `userInput` as sent."""
    done = req.model_copy()
    done.resolution = decision.resolution
    done.decided_by = decision.decided_by
    done.source = decision.source
    done.decided_at = now
    done.confirmed = decision.resolution != "reject"
    done.rejection_feedback = decision.feedback if decision.resolution == "reject" else None
    if decision.resolution == "edit":
        done.edited_output = decision.edited_output
    done.user_input = _form_values(req, decision, schema)
    done.selected_choices = decision.selected_choices
    if decision.is_timeout:
        done.resolution = f"timeout:{req.on_timeout}"
    return done


def _form_values(
    req: Requirement, decision: Decision, schema: list[UserInputField] | None
) -> dict[str, Any] | None:
    if schema is None or not req.requires_user_input or decision.resolution == "reject":
        return decision.user_input
    try:
        return collect_input(schema, decision.user_input or {})
    except GateError:  # a timer's approve of an incomplete form: the step is skipped
        return decision.user_input


def takes_else_branch(review: HumanReview, decision: Decision) -> bool:
    """A person's reject on a condition with onReject=else_branch runs its false branch."""
    return (
        decision.resolution == "reject"
        and review.on_reject == "else_branch"
        and not decision.is_timeout
    )


def cancels_run(review: HumanReview, decision: Decision) -> bool:
    """The decision's policy cancels the run (`after_rejection` then raises RunCancelled)."""
    if decision.resolution != "reject":
        return False
    if decision.is_timeout:
        return review.on_timeout == "cancel"
    return review.on_reject == "cancel"


def fails_run(
    review: HumanReview, decision: Decision, retry_count: int, node: WorkflowNode
) -> bool:
    """The decision's policy fails the run (`after_rejection` then raises NodeFailed).

    Nothing catches a NodeFailed on its way up (containers have no onError; a step's
    `skip` is applied here), so such a decision certainly ends the run.
    """
    if decision.resolution != "reject":
        return False
    return rejection_outcome(review, decision, retry_count, node) == "fail"


def rejection_outcome(
    review: HumanReview, decision: Decision, retry_count: int, node: WorkflowNode
) -> Literal["skip", "retry", "cancel", "fail"]:
    """What a rejection (a person's, or a timer's) does to the node and the run."""
    policy = review.on_reject
    if decision.is_timeout:
        policy = "cancel" if review.on_timeout == "cancel" else "skip"
    if policy == "cancel":
        return "cancel"
    if policy == "retry":
        if retry_count < review.max_retries:
            return "retry"
        config = node.step_config or StepConfig()
        if node.node_type == "step" and config.on_error == "skip":
            return "skip"
        return "fail"
    return "skip"


def retries_spent(retry_count: int, singular: bool = True) -> str:
    """`rejected by reviewer after N retries`, with "1 retry" for one (`singular`: the
    run took gate_policy's RETRY_WORDING_PATCH; before it, "1 retries")."""
    noun = "retry" if retry_count == 1 and singular else "retries"
    return f"rejected by reviewer after {retry_count} {noun}"


def after_rejection(
    review: HumanReview,
    decision: Decision,
    retry_count: int,
    node: WorkflowNode,
    singular: bool = True,
) -> Literal["skip", "retry"]:
    """What a rejection does: skip the node or retry it; raises to cancel or fail the run
    (its error worded as `retries_spent` says)."""
    outcome = rejection_outcome(review, decision, retry_count, node)
    if outcome == "cancel":
        why = "timed out" if decision.is_timeout else f"rejected by {decision.decided_by}"
        raise RunCancelled(f"Cancelled at '{node.name}' ({why})")
    if outcome == "fail":
        raise NodeFailed(
            node.name,
            retries_spent(retry_count, singular)
            + (f": {decision.feedback}" if decision.feedback else ""),
        )
    return outcome
