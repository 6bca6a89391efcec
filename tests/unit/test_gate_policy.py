"""What a decision does to its node, without a server: timers, the audit record, rejections."""

from __future__ import annotations

from typing import Any

import pytest

from temporal_workflows.definition import HumanReview, WorkflowNode
from temporal_workflows.gate_policy import (
    after_rejection,
    resolved,
    takes_else_branch,
    timeout_decision,
)
from temporal_workflows.gates import TIMEOUT, Decision, before_gate
from temporal_workflows.outcomes import NodeFailed, RunCancelled


def gated(node_type: str = "step", on_error: str = "fail", **review: Any) -> WorkflowNode:
    return WorkflowNode.model_validate(
        {
            "id": "n1",
            "name": "Gated",
            "nodeType": node_type,
            "executorKey": "builtin:echo" if node_type == "step" else None,
            "stepConfig": {"onError": on_error} if node_type == "step" else None,
            "humanReview": {"requiresConfirmation": True, **review},
        }
    )


def review_of(n: WorkflowNode) -> HumanReview:
    assert n.human_review is not None
    return n.human_review


REJECT = Decision(step_id="n1", resolution="reject", feedback="no", decided_by="alice")


@pytest.mark.parametrize(
    ("on_timeout", "resolution"), [("approve", "confirm"), ("skip", "reject"), ("cancel", "reject")]
)
def test_a_timer_decides_by_the_gates_on_timeout(on_timeout: str, resolution: str) -> None:
    n = gated(onTimeout=on_timeout)
    decision = timeout_decision(before_gate(n, review_of(n), None))
    assert decision.resolution == resolution
    assert decision.is_timeout and decision.decided_by == TIMEOUT


def test_the_audit_record_says_what_was_decided_by_whom() -> None:
    n = gated()
    req = before_gate(n, review_of(n), None)
    done = resolved(req, REJECT, "2026-01-01T00:00:00Z")
    assert (done.resolution, done.decided_by, done.decided_at) == (
        "reject",
        "alice",
        "2026-01-01T00:00:00Z",
    )
    assert done.confirmed is False and done.rejection_feedback == "no"
    timed_out = resolved(req, timeout_decision(req), "t")
    assert timed_out.resolution == "timeout:cancel"


@pytest.mark.parametrize("on_reject", ["skip", "else_branch"])
def test_a_rejection_skips_under_skip(on_reject: str) -> None:
    n = gated("condition", onReject=on_reject) if on_reject == "else_branch" else gated()
    assert after_rejection(review_of(n), REJECT, 0, n) == "skip"


def test_a_rejection_cancels_the_run_under_cancel() -> None:
    n = gated(onReject="cancel")
    with pytest.raises(RunCancelled, match="alice rejected"):
        after_rejection(review_of(n), REJECT, 0, n)


def test_a_rejection_retries_until_max_retries_then_fails() -> None:
    n = gated(onReject="retry", maxRetries=2)
    assert after_rejection(review_of(n), REJECT, 1, n) == "retry"
    with pytest.raises(NodeFailed, match="rejected by reviewer after 2 retries: no"):
        after_rejection(review_of(n), REJECT, 2, n)


def test_exhausted_retries_skip_a_step_whose_on_error_is_skip() -> None:
    n = gated(on_error="skip", onReject="retry", maxRetries=0)
    assert after_rejection(review_of(n), REJECT, 0, n) == "skip"


@pytest.mark.parametrize(("on_timeout", "outcome"), [("skip", "skip"), ("cancel", "cancel")])
def test_a_timers_rejection_follows_on_timeout_not_on_reject(on_timeout: str, outcome: str) -> None:
    n = gated(onReject="retry", onTimeout=on_timeout)
    decision = timeout_decision(before_gate(n, review_of(n), None))
    if outcome == "cancel":
        with pytest.raises(RunCancelled):
            after_rejection(review_of(n), decision, 0, n)
    else:
        assert after_rejection(review_of(n), decision, 0, n) == "skip"


def test_only_a_persons_reject_takes_the_else_branch() -> None:
    n = gated("condition", onReject="else_branch", onTimeout="skip")
    assert takes_else_branch(review_of(n), REJECT)
    timer = timeout_decision(before_gate(n, review_of(n), None))
    assert not takes_else_branch(review_of(n), timer)
    assert not takes_else_branch(review_of(gated()), REJECT)
