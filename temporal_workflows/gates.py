"""Human-in-the-loop gates: the pending requirement a node exposes and how a decision is checked.

Pure functions and models; the interpreter holds the gates and waits on them.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal, get_args

from pydantic import Field

from temporal_workflows.base import CamelModel
from temporal_workflows.definition import HumanReview, UserInputField, WorkflowNode

Resolution = Literal["confirm", "reject", "edit", "user_input", "route_select"]
GateKind = Literal["before", "output_review", "iteration_review", "route_selection"]
GATE_KINDS: tuple[str, ...] = get_args(GateKind)
# What made a decision: a person (decidedBy is their sub) or the gate's timer (decidedBy
# is null). A kind, not a name, so a user whose sub is "timeout" is still a person.
DecisionSource = Literal["user", "timeout"]
PYTHON_TYPE_NAMES = {"string": "str", "number": "float", "boolean": "bool", "array": "list"}


class GateError(Exception):
    """A decision the gate refuses; `kind` maps to the HTTP status (see app/routes)."""

    def __init__(
        self,
        kind: Literal["not_found", "invalid", "conflict"],
        message: str,
        problems: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        # Each problem's `path` and `message`, as the API's error `details` list them.
        self.problems = problems or []


class Decision(CamelModel):
    step_id: str = Field(min_length=1, max_length=128)
    resolution: Resolution
    feedback: str | None = Field(default=None, max_length=10_000)
    edited_output: Any = None
    # `editedOutput: null` is a legitimate edit; this says whether the field was sent.
    has_edited_output: bool = False
    user_input: dict[str, Any] | None = None
    selected_choices: list[str] | None = None
    # The deciding caller's sub (None for the timer). Decisions recorded before callers
    # were authenticated say "anonymous".
    decided_by: str | None = None
    source: DecisionSource = "user"
    # What the API was asked, hashed, when the request carried an Idempotency-Key: echoed
    # in the result, so a repeat under the key can be told from another request.
    request_fingerprint: str | None = None
    # Which opening of the step's gate the caller could see (`gate_key`, from the run's
    # record as the API read it): a decision is refused for another (a loop's next
    # iteration review). Ten identical confirms sent at once decided three iterations.
    seen_gate: str | None = None
    # And which of its gates: a step's output review opens on the node run its confirmation
    # opened on, so a double-clicked confirm approved an output no one had seen. (A worker
    # of an earlier release ignores it, as it ignores any field it does not know.)
    seen_kind: GateKind | None = None
    # When the API received a decision that named no opening (no `gate`, no key) and read
    # none open in the run's record, in UTC: a gate opened after it is refused
    # (temporal_workflows/gate_arrival.py). Its reader's next opening was decided.
    arrived_at: str | None = None

    @property
    def is_timeout(self) -> bool:
        """Made by the gate's timer (its onTimeout policy), not by a person."""
        return self.source == "timeout"


class DecisionResult(CamelModel):
    run_id: str
    status: str
    resolved_step_id: str
    request_fingerprint: str | None = None


class PendingUserInputField(CamelModel):
    name: str
    field_type: str | None = None
    description: str | None = None
    required: bool = True
    value: Any = None
    allowed_values: list[Any] | None = None


class Requirement(CamelModel):
    """One gate awaiting a decision: the contract's StepRequirementSummary, plus audit fields."""

    schema_version: int = 1
    step_id: str
    step_name: str | None = None
    step_index: int | None = None
    step_type: str | None = None
    requires_confirmation: bool = False
    requires_user_input: bool = False
    requires_output_review: bool = False
    requires_route_selection: bool = False
    confirmation_message: str | None = None
    user_input_message: str | None = None
    user_input_schema: list[PendingUserInputField] | None = None
    output_review_message: str | None = None
    iteration_review_message: str | None = None
    available_choices: list[str] | None = None
    suggested_choices: list[str] | None = None
    allow_multiple_selections: bool = False
    step_output: Any = None
    is_post_execution: bool = False
    confirmed: bool | None = None
    rejection_feedback: str | None = None
    edited_output: Any = None
    user_input: dict[str, Any] | None = None
    selected_choices: list[str] | None = None
    retry_count: int = 0
    max_retries: int | None = None
    timeout_at: str | None = None
    on_timeout: str = "cancel"
    on_reject: str = "skip"
    # Audit and bookkeeping (extensions of the contract's shape).
    kind: GateKind = "before"
    node_run_id: str | None = None
    # Where the gate waits: an iteration review's own iteration; any other gate's innermost
    # enclosing loop iteration and map item (null outside them), as its node run shows.
    iteration: int | None = None
    item_index: int | None = None
    created_at: str | None = None
    resolution: str | None = None
    decided_by: str | None = None
    # "user" or "timeout" once decided (audit records from before say neither).
    source: DecisionSource | None = None
    decided_at: str | None = None

    @property
    def key(self) -> str | None:
        """Which opening of its step's gate this is (`gate_key`)."""
        return gate_key(self.node_run_id, self.iteration, self.item_index)


def gate_key(node_run_id: object, iteration: object, item_index: object) -> str | None:
    """Which opening of a step's gate: its node run, iteration and map item. Not its
    opening time, which a workflow task run again (a worker lost) gives it anew; None for
    a gate recorded before gates named their node run."""
    if not isinstance(node_run_id, str):
        return None
    return f"{node_run_id}|{iteration}|{item_index}"


def before_gate(node: WorkflowNode, review: HumanReview, choices: list[str] | None) -> Requirement:
    """The gate before a node runs: confirmation, a form, or (routers) route selection."""
    route = node.node_type == "router" and review.requires_user_input
    form = review.requires_user_input and not route
    return _gate(
        node,
        review,
        requires_confirmation=review.requires_confirmation,
        requires_user_input=form,
        requires_route_selection=route,
        confirmation_message=review.confirmation_message,
        user_input_message=review.user_input_message,
        user_input_schema=[pending_field(f) for f in review.user_input_schema] if form else None,
        available_choices=choices if route else None,
        allow_multiple_selections=review.allow_multiple_selections if route else False,
        kind="route_selection" if route else "before",
    )


def review_gate(node: WorkflowNode, review: HumanReview, output: Any) -> Requirement:
    """The gate after a step or router ran: review, edit or reject its output."""
    return _gate(
        node,
        review,
        requires_output_review=True,
        output_review_message=review.output_review_message,
        step_output=output,
        is_post_execution=True,
        kind="output_review",
    )


def iteration_gate(
    node: WorkflowNode, review: HumanReview, iteration: int, output: Any
) -> Requirement:
    """The gate after each loop iteration: continue (confirm) or end the loop (reject)."""
    return _gate(
        node,
        review,
        requires_confirmation=True,
        confirmation_message=review.iteration_review_message,
        iteration_review_message=review.iteration_review_message,
        step_output=output,
        is_post_execution=True,
        iteration=iteration,
        kind="iteration_review",
    )


def _gate(node: WorkflowNode, review: HumanReview, **fields: Any) -> Requirement:
    """A gate of `node`: what every gate says about its node and policies, plus `fields`."""
    return Requirement(
        step_id=node.node_id,
        step_name=node.name,
        step_type=node.node_type,
        max_retries=review.max_retries,
        on_timeout=review.on_timeout,
        on_reject=review.on_reject,
        **fields,
    )


def pending_field(field: UserInputField) -> PendingUserInputField:
    """The runtime shape of a form field (python type names, `value` instead of default)."""
    return PendingUserInputField(
        name=field.name,
        field_type=PYTHON_TYPE_NAMES[field.field_type],
        description=field.description,
        required=field.required,
        value=field.default_value,
        allowed_values=field.allowed_values,
    )


def check_decision(req: Requirement, decision: Decision, schema: list[UserInputField]) -> None:
    """Raise GateError(invalid) when the resolution does not fit the requirement (contract 10)."""
    r = decision.resolution
    if r == "edit":
        if not (req.requires_output_review and req.is_post_execution):
            raise GateError(
                "invalid", "edit needs a requirement with requiresOutputReview and isPostExecution"
            )
        if not decision.has_edited_output:
            raise GateError("invalid", "edit needs editedOutput")
    elif r == "user_input":
        if not req.requires_user_input:
            raise GateError("invalid", "user_input needs a requirement with requiresUserInput")
        if decision.user_input is None:
            raise GateError("invalid", "user_input needs userInput")
        collect_input(schema, decision.user_input)
    elif r == "route_select":
        if not req.requires_route_selection:
            raise GateError(
                "invalid", "route_select needs a requirement with requiresRouteSelection"
            )
        check_choices(req, decision.selected_choices)
    elif r == "confirm" and req.requires_user_input:
        collect_input(schema, {})  # confirming a form accepts its defaults, if complete
    elif r == "confirm" and req.requires_route_selection:
        suggested = req.suggested_choices
        if suggested is None:
            # Confirming takes the suggestion; accepted without one, it failed the router.
            raise GateError(
                "invalid",
                "confirm takes the router's suggested route, and its conditionCel gave no "
                "valid one: choose with route_select",
            )
        if len(suggested) > 1 and not req.allow_multiple_selections:
            # Confirmed, every suggested route ran, though the gate allows one.
            raise GateError(
                "invalid",
                f"confirm takes the router's suggestion ({', '.join(suggested)}), and this "
                "gate allows one route: choose with route_select",
            )


def as_saved(selected: list[str], names: list[str]) -> list[str]:
    """Each selected name as the choice it names in Unicode's composed form (NFC): "café"
    typed (one code point for é) names a choice saved decomposed (e + a combining accent),
    as two such sibling names are one name when a definition is saved. The router's own
    selection and a person's `route_select` both go through here."""
    by_form = {unicodedata.normalize("NFC", n): n for n in names}
    return [by_form.get(unicodedata.normalize("NFC", v), v) for v in selected]


def check_choices(req: Requirement, selected: list[str] | None) -> None:
    if not selected:
        raise GateError("invalid", "route_select needs a non-empty selectedChoices")
    choices = req.available_choices or []
    unknown = [c for c in selected if c not in choices]
    if unknown:
        raise GateError(
            "invalid", f"{unknown[0]!r} is not a choice (choices: {', '.join(choices)})"
        )
    if len(selected) > 1 and not req.allow_multiple_selections:
        raise GateError("invalid", "this router accepts exactly one selected choice")
    if len(set(selected)) != len(selected):
        raise GateError("invalid", "selectedChoices lists a choice twice")


_TYPE_CHECKS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


def collect_input(schema: list[UserInputField], given: dict[str, Any]) -> dict[str, Any]:
    """Form values checked against the schema (required, types, allowed values), defaults
    filled. GateError names every problem at once (a person fixing one field at a time
    sent the form again for each)."""
    fields = {f.name: f for f in schema}
    problems: list[tuple[str, str]] = []
    unknown = sorted(set(given) - set(fields))
    if unknown:
        problems.append(("userInput", f"has unknown fields: {', '.join(unknown)}"))
    values: dict[str, Any] = {}
    for name, field in fields.items():
        if name in given and given[name] is not None:
            value = given[name]
        elif field.default_value is not None:
            value = field.default_value
        elif field.required:
            problems.append((f"userInput.{name}", "is required"))
            continue
        else:
            continue
        problem = value_problem(field, value)
        if problem is not None:
            problems.append((f"userInput.{name}", problem))
        values[name] = value
    if problems:
        said = "; ".join(f"{path} {message}" for path, message in problems)
        details = [{"path": path, "message": message} for path, message in problems]
        raise GateError("invalid", said, details)
    return values


def value_problem(field: UserInputField, value: Any) -> str | None:
    """Why `value` does not fit the form field (its type, its allowed values), or None."""
    if not isinstance(value, _TYPE_CHECKS[field.field_type]) or (
        field.field_type == "number" and isinstance(value, bool)
    ):
        article = "an" if field.field_type == "array" else "a"
        return f"must be {article} {field.field_type}"
    if field.allowed_values is not None and value not in field.allowed_values:
        return f"must be one of {field.allowed_values}"
    return None
