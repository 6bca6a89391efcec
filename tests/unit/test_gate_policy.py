"""What a decision does to its node, without a server: timers, the audit record, rejections."""

from __future__ import annotations

from typing import Any

import pytest

from temporal_workflows.definition import HumanReview, WorkflowNode
from temporal_workflows.gate_policy import (
    after_rejection,
    cancels_run,
    fails_run,
    resolved,
    retries_spent,
    takes_else_branch,
    timeout_decision,
)
from temporal_workflows.gates import Decision, before_gate
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
    assert decision.is_timeout and decision.decided_by is None
    assert decision.source == "timeout"


def test_a_user_whose_sub_is_timeout_is_not_the_timer() -> None:
    n = gated(onReject="cancel", onTimeout="skip")
    person = Decision(step_id="n1", resolution="reject", decided_by="timeout")
    assert not person.is_timeout
    # A person's reject follows onReject (cancel), not onTimeout (skip).
    with pytest.raises(RunCancelled, match="rejected by timeout"):
        after_rejection(review_of(n), person, 0, n)
    done = resolved(before_gate(n, review_of(n), None), person, "t", [])
    assert (done.resolution, done.decided_by, done.source) == ("reject", "timeout", "user")


def test_decisions_recorded_before_sources_load_as_a_persons() -> None:
    old = Decision.model_validate(
        {"stepId": "n1", "resolution": "confirm", "decidedBy": "anonymous"}
    )
    assert old.source == "user" and not old.is_timeout


def test_the_audit_record_says_what_was_decided_by_whom() -> None:
    n = gated()
    req = before_gate(n, review_of(n), None)
    done = resolved(req, REJECT, "2026-01-01T00:00:00Z", [])
    assert (done.resolution, done.decided_by, done.decided_at) == (
        "reject",
        "alice",
        "2026-01-01T00:00:00Z",
    )
    assert done.confirmed is False and done.rejection_feedback == "no"
    assert done.source == "user"
    timed_out = resolved(req, timeout_decision(req), "t", [])
    assert timed_out.resolution == "timeout:cancel"
    assert (timed_out.decided_by, timed_out.source) == (None, "timeout")


@pytest.mark.parametrize("on_reject", ["skip", "else_branch"])
def test_a_rejection_skips_under_skip(on_reject: str) -> None:
    n = gated("condition", onReject=on_reject) if on_reject == "else_branch" else gated()
    assert after_rejection(review_of(n), REJECT, 0, n) == "skip"


def test_a_rejection_cancels_the_run_under_cancel() -> None:
    n = gated(onReject="cancel")
    with pytest.raises(RunCancelled, match="rejected by alice"):
        after_rejection(review_of(n), REJECT, 0, n)


def test_a_rejection_retries_until_max_retries_then_fails() -> None:
    n = gated(onReject="retry", maxRetries=2)
    assert after_rejection(review_of(n), REJECT, 1, n) == "retry"
    with pytest.raises(NodeFailed, match="rejected by reviewer after 2 retries: no"):
        after_rejection(review_of(n), REJECT, 2, n)


def test_one_retry_spent_says_retry_and_runs_recorded_before_keep_retries() -> None:
    n = gated(onReject="retry", maxRetries=1)
    with pytest.raises(NodeFailed, match=r"after 1 retry: no$"):
        after_rejection(review_of(n), REJECT, 1, n)
    assert retries_spent(0) == "rejected by reviewer after 0 retries"
    assert retries_spent(1, singular=False) == "rejected by reviewer after 1 retries"


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


@pytest.mark.parametrize("on_reject", ["skip", "cancel", "retry", "else_branch"])
@pytest.mark.parametrize("on_timeout", ["skip", "cancel", "approve"])
def test_cancels_run_says_what_the_rejection_policy_does(on_reject: str, on_timeout: str) -> None:
    # A paused run is cancelled at once by a decision this says cancels it (reviews.py).
    node_type = "condition" if on_reject == "else_branch" else "step"
    n = gated(node_type, onReject=on_reject, onTimeout=on_timeout)
    timer = timeout_decision(before_gate(n, review_of(n), None))
    confirm = Decision(step_id="n1", resolution="confirm", decided_by="alice")
    assert not cancels_run(review_of(n), confirm)
    for decision in (REJECT, timer):
        if decision.resolution != "reject" or takes_else_branch(review_of(n), decision):
            assert not cancels_run(review_of(n), decision)
            continue
        try:
            after_rejection(review_of(n), decision, 0, n)
            cancelled = False
        except RunCancelled:
            cancelled = True
        except NodeFailed:
            cancelled = False
        assert cancels_run(review_of(n), decision) is cancelled, decision


@pytest.mark.parametrize("node_type", ["step", "loop", "router"])
@pytest.mark.parametrize("on_error", ["fail", "skip", "retry"])
@pytest.mark.parametrize("on_reject", ["skip", "cancel", "retry"])
@pytest.mark.parametrize("retry_count", [0, 1])
def test_fails_run_says_what_the_rejection_policy_does(
    node_type: str, on_error: str, on_reject: str, retry_count: int
) -> None:
    # A paused run is failed at once by a decision this says fails it (reviews.py).
    n = gated(node_type, on_error, onReject=on_reject, maxRetries=1, onTimeout="skip")
    timer = timeout_decision(before_gate(n, review_of(n), None))
    confirm = Decision(step_id="n1", resolution="confirm", decided_by="alice")
    assert not fails_run(review_of(n), confirm, retry_count, n)
    for decision in (REJECT, timer):
        try:
            after_rejection(review_of(n), decision, retry_count, n)
            failed = False
        except NodeFailed:
            failed = True
        except RunCancelled:
            failed = False
        assert fails_run(review_of(n), decision, retry_count, n) is failed, decision


def test_a_form_decision_records_the_values_used_given_its_schema_and_as_sent_without() -> None:
    n = gated(
        requiresConfirmation=False,
        requiresUserInput=True,
        userInputSchema=[{"name": "lvl", "fieldType": "string", "defaultValue": "low"}],
    )
    review = review_of(n)
    req = before_gate(n, review, None)
    confirm = Decision(step_id="n1", resolution="confirm", decided_by="alice")
    assert resolved(req, confirm, "t", review.user_input_schema).user_input == {"lvl": "low"}
    # Without the schema (a decision recorded before the values were): as sent, so its
    # replay writes the record it wrote then.
    assert resolved(req, confirm, "t", None).user_input is None
