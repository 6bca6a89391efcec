"""Which node-run writes the outbox may hand to a step (recorder.settled): those no later
write of the same node run shares a rev with, so a repeat landing late is refused."""

from __future__ import annotations

from typing import Any

import pytest

from temporal_workflows.definition import WorkflowNode
from temporal_workflows.read_model import FINAL_REV, INLINE_DONE_REV, OPEN_REV, REVIEW_REV
from temporal_workflows.recorder import settled


def _node(node_type: str, review: dict[str, Any] | None = None) -> WorkflowNode:
    fields: dict[str, Any] = {"id": "n", "name": "n", "nodeType": node_type}
    if node_type == "step":
        fields["executorKey"] = "builtin:echo"
    if node_type == "loop":
        fields |= {"loopConfig": {"maxIterations": 2}, "children": []}
    if node_type == "parallel":
        fields["children"] = []
    if review is not None:
        fields["humanReview"] = review
    return WorkflowNode.model_validate(fields)


@pytest.mark.parametrize(
    ("node_type", "review", "status", "rev", "expected"),
    [
        pytest.param("step", None, "completed", INLINE_DONE_REV, True, id="inline_step_done"),
        pytest.param("step", None, "failed", FINAL_REV, True, id="step_failed"),
        pytest.param("loop", None, "skipped", FINAL_REV, True, id="container_skipped"),
        pytest.param("parallel", None, "running", OPEN_REV, True, id="container_started"),
        pytest.param(
            "loop",
            {"requiresIterationReview": True},
            "running",
            OPEN_REV,
            False,
            id="gated_container_started",
        ),
        pytest.param(
            "parallel",
            {"requiresConfirmation": False},
            "running",
            OPEN_REV,
            True,
            id="container_with_an_inactive_review_started",
        ),
        pytest.param(
            "loop",
            {"requiresIterationReview": True},
            "awaiting_approval",
            OPEN_REV,
            False,
            id="container_gate",
        ),
        pytest.param(
            "step",
            {"requiresOutputReview": True},
            "awaiting_approval",
            REVIEW_REV,
            False,
            id="step_gate",
        ),
        pytest.param("step", None, "running", OPEN_REV, False, id="step_running"),
        pytest.param("step", None, "pending", 0, False, id="step_held_before_its_gate"),
    ],
)
def test_a_write_is_settled_only_when_no_later_write_of_its_node_run_shares_its_rev(
    node_type: str, review: dict[str, Any] | None, status: Any, rev: int, expected: bool
) -> None:
    assert settled(_node(node_type, review), status, rev) is expected
