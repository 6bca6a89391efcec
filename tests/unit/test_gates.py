"""The gate models without a server: what each gate asks for, and which decisions fit it."""

from __future__ import annotations

from typing import Any

import pytest

from temporal_workflows.definition import HumanReview, UserInputField, WorkflowNode
from temporal_workflows.gates import (
    Decision,
    GateError,
    before_gate,
    check_decision,
    collect_input,
    iteration_gate,
    review_gate,
)


def node(node_type: str = "step", **review: Any) -> WorkflowNode:
    return WorkflowNode.model_validate(
        {
            "id": "n1",
            "name": "Review me",
            "nodeType": node_type,
            "executorKey": "builtin:echo" if node_type == "step" else None,
            "humanReview": review,
        }
    )


def review_of(n: WorkflowNode) -> HumanReview:
    assert n.human_review is not None
    return n.human_review


FORM = [
    UserInputField(name="amount", field_type="number"),
    UserInputField(name="note", field_type="string", required=False),
    UserInputField(name="tier", field_type="string", allowed_values=["gold", "silver"]),
]


def test_a_confirmation_gate_asks_to_confirm_before_the_step_runs() -> None:
    n = node(requiresConfirmation=True, confirmationMessage="Go?", onReject="retry")
    req = before_gate(n, review_of(n), None)
    assert (req.step_id, req.step_name, req.step_type) == ("n1", "Review me", "step")
    assert req.requires_confirmation and not req.requires_user_input
    assert req.confirmation_message == "Go?"
    assert not req.is_post_execution
    assert (req.kind, req.on_reject, req.on_timeout) == ("before", "retry", "cancel")


def test_a_form_gate_shows_the_runtime_field_shape() -> None:
    n = node(
        requiresUserInput=True,
        userInputSchema=[{"name": "amount", "fieldType": "number", "defaultValue": 3}],
    )
    req = before_gate(n, review_of(n), None)
    assert req.requires_user_input
    assert req.user_input_schema is not None
    [field] = req.user_input_schema
    assert (field.name, field.field_type, field.value, field.required) == (
        "amount",
        "float",
        3,
        True,
    )


def test_a_router_with_user_input_asks_for_a_route_not_a_form() -> None:
    n = node("router", requiresUserInput=True, allowMultipleSelections=True)
    req = before_gate(n, review_of(n), ["a", "b"])
    assert req.requires_route_selection and not req.requires_user_input
    assert req.available_choices == ["a", "b"]
    assert req.allow_multiple_selections
    assert req.kind == "route_selection"


def test_an_output_review_carries_the_output_after_execution() -> None:
    n = node(requiresOutputReview=True, outputReviewMessage="Check it")
    req = review_gate(n, review_of(n), {"x": 1})
    assert req.requires_output_review and req.is_post_execution
    assert req.step_output == {"x": 1}
    assert req.kind == "output_review"


def test_an_iteration_review_names_its_iteration() -> None:
    n = node("loop", requiresIterationReview=True, iterationReviewMessage="More?")
    req = iteration_gate(n, review_of(n), 2, "last")
    assert (req.iteration, req.step_output, req.step_type) == (2, "last", "loop")
    assert req.requires_confirmation and req.confirmation_message == "More?"


@pytest.mark.parametrize(
    ("gate", "resolution", "fits"),
    [
        ("before", "confirm", True),
        ("before", "reject", True),
        ("before", "edit", False),
        ("before", "user_input", False),
        ("before", "route_select", False),
        ("review", "edit", True),
        ("review", "user_input", False),
        ("form", "user_input", True),
        ("form", "route_select", False),
        ("route", "route_select", True),
        ("route", "edit", False),
    ],
)
def test_a_resolution_fits_only_the_gates_the_contract_allows(
    gate: str, resolution: str, fits: bool
) -> None:
    if gate == "review":
        n = node(requiresOutputReview=True)
        req = review_gate(n, review_of(n), 1)
    elif gate == "route":
        n = node("router", requiresUserInput=True)
        req = before_gate(n, review_of(n), ["a", "b"])
    elif gate == "form":
        n = node(requiresUserInput=True)
        req = before_gate(n, review_of(n), None)
    else:
        n = node(requiresConfirmation=True)
        req = before_gate(n, review_of(n), None)
    decision = Decision(
        step_id="n1",
        resolution=resolution,  # type: ignore[arg-type]
        edited_output={"y": 2},
        has_edited_output=True,
        user_input={},
        selected_choices=["a"],
    )
    if fits:
        check_decision(req, decision, [])
    else:
        with pytest.raises(GateError) as raised:
            check_decision(req, decision, [])
        assert raised.value.kind == "invalid"


def test_edit_needs_the_edited_output_field() -> None:
    n = node(requiresOutputReview=True)
    req = review_gate(n, review_of(n), 1)
    with pytest.raises(GateError, match="edit needs editedOutput"):
        check_decision(req, Decision(step_id="n1", resolution="edit"), [])
    # An explicit null is a real edit.
    check_decision(req, Decision(step_id="n1", resolution="edit", has_edited_output=True), [])


@pytest.mark.parametrize(
    ("selected", "multiple", "message"),
    [
        ([], False, "non-empty selectedChoices"),
        (["c"], False, "'c' is not a choice"),
        (["a", "b"], False, "exactly one selected choice"),
        (["a", "a"], True, "lists a choice twice"),
    ],
)
def test_a_route_selection_must_name_known_choices(
    selected: list[str], multiple: bool, message: str
) -> None:
    n = node("router", requiresUserInput=True, allowMultipleSelections=multiple)
    req = before_gate(n, review_of(n), ["a", "b"])
    decision = Decision(step_id="n1", resolution="route_select", selected_choices=selected)
    with pytest.raises(GateError, match=message):
        check_decision(req, decision, [])


def test_confirming_a_route_needs_a_suggestion_to_take() -> None:
    n = node("router", requiresUserInput=True)
    req = before_gate(n, review_of(n), ["a", "b"])
    confirm = Decision(step_id="n1", resolution="confirm")
    with pytest.raises(GateError, match="choose with route_select") as raised:
        check_decision(req, confirm, [])
    assert raised.value.kind == "invalid"
    req.suggested_choices = ["b"]
    check_decision(req, confirm, [])


def test_confirming_a_suggestion_of_two_routes_needs_multiple_selections() -> None:
    n = node("router", requiresUserInput=True)
    req = before_gate(n, review_of(n), ["a", "b"])
    req.suggested_choices = ["a", "b"]
    confirm = Decision(step_id="n1", resolution="confirm")
    with pytest.raises(GateError, match=r"\(a, b\), and this gate allows one route") as raised:
        check_decision(req, confirm, [])
    assert raised.value.kind == "invalid"
    req.allow_multiple_selections = True
    check_decision(req, confirm, [])


def test_form_values_are_checked_and_defaults_filled() -> None:
    schema = [*FORM, UserInputField(name="count", field_type="number", default_value=1)]
    values = collect_input(schema, {"amount": 2.5, "tier": "gold"})
    assert values == {"amount": 2.5, "tier": "gold", "count": 1}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"tier": "gold"}, "userInput.amount is required"),
        ({"amount": "2", "tier": "gold"}, "userInput.amount must be a number"),
        ({"amount": True, "tier": "gold"}, "userInput.amount must be a number"),
        ({"amount": 1, "tier": "bronze"}, "userInput.tier must be one of"),
        ({"amount": 1, "tier": "gold", "extra": 1}, "unknown fields: extra"),
    ],
)
def test_form_values_that_break_the_schema_are_refused(given: dict[str, Any], message: str) -> None:
    with pytest.raises(GateError, match=message) as raised:
        collect_input(FORM, given)
    assert raised.value.kind == "invalid"


def test_an_array_field_is_named_with_its_article() -> None:
    schema = [UserInputField(name="tags", field_type="array", required=False)]
    with pytest.raises(GateError, match=r"userInput\.tags must be an array$"):
        collect_input(schema, {"tags": "x"})


def test_confirming_a_form_accepts_its_defaults_only_when_complete() -> None:
    n = node(requiresUserInput=True)
    req = before_gate(n, review_of(n), None)
    confirm = Decision(step_id="n1", resolution="confirm")
    check_decision(req, confirm, [UserInputField(name="a", default_value="x")])
    with pytest.raises(GateError, match=r"userInput\.a is required"):
        check_decision(req, confirm, [UserInputField(name="a")])
