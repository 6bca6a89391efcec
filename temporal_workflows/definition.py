"""The workflow definition: a tree of nodes, as the builder draws it and the interpreter runs it.

Shape rules per node type live in `validation.py`; this module only declares fields,
their types and numeric bounds, so it stays importable inside the workflow sandbox.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from temporal_workflows.base import INTEGRAL, CamelModel
from temporal_workflows.principals import PRINCIPAL_PATTERN

# The longest a gate may wait before its onTimeout applies (a node's, or the default).
MAX_GATE_TIMEOUT_SECONDS = 366 * 86_400


class DefinitionModel(CamelModel):
    """A part of a definition: strict, so `"1"` is no number and `0` no boolean (what the
    OpenAPI document says is what is accepted); JSON-native input is unaffected."""

    model_config = ConfigDict(strict=True)


NodeType = Literal["step", "parallel", "loop", "condition", "router", "map"]
OnError = Literal["fail", "skip", "retry"]
OnReject = Literal["skip", "cancel", "retry", "else_branch"]
OnTimeout = Literal["approve", "skip", "cancel"]
AuthoringFieldType = Literal["string", "number", "boolean", "array"]

MAX_NAME_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 5_000
MAX_EXPRESSION_LENGTH = 4_000
MAX_MESSAGE_LENGTH = 4_000
MAX_APPROVERS = 50
MAX_POOL = 5
# Temporal refuses more than 2,000 pending activities per workflow; stay well below.
MAX_CONCURRENCY = 500
# A node's id (and every other id: docs/api.md, "Ids"); compiled in validation.py.
NODE_ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"

# What save time refuses, said in the OpenAPI document only: validation.py refuses it with
# a message naming the node, beside every other problem of the definition, and a model
# read back from the store or a Temporal payload is never refused for it.
NodeId = Annotated[str, Field(json_schema_extra={"pattern": NODE_ID_REGEX, "minLength": 1})]
NonEmpty = Annotated[str, Field(json_schema_extra={"minLength": 1})]
# The document's patterns spell whitespace out: `\s` is another set in each engine (ECMA's,
# which OpenAPI means, takes U+FEFF but not U+0085; pydantic's Rust regex takes Unicode's
# White_Space; Python's re and str.strip() take U+001C-U+001F too).
_CONTROLS = r"\u0000-\u001F\u007F-\u009F"
_SPACES = r"\u0020\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
_WHITE_SPACE = rf"\u0009-\u000D\u0085{_SPACES}"
# A node's or a router choice's name: no control character (Unicode Cc), not blank.
NAME_PATTERN = rf"^[^{_CONTROLS}]*[^{_CONTROLS}{_SPACES}][^{_CONTROLS}]*$"
Name = Annotated[str, Field(json_schema_extra={"pattern": NAME_PATTERN})]
# A workflow's name is stripped before it is checked: whitespace around it may be any.
_AROUND = rf"[{_WHITE_SPACE}\u001C-\u001F]*"
WORKFLOW_NAME_PATTERN = f"^{_AROUND}{NAME_PATTERN[1:-1]}{_AROUND}$"
WorkflowName = Annotated[str, Field(json_schema_extra={"pattern": WORKFLOW_NAME_PATTERN})]
# Who may decide a gate (principals.py); checked at save time (validation.py), so a
# definition stored before the rule was stricter still loads and runs.
Approver = Annotated[str, Field(json_schema_extra={"pattern": PRINCIPAL_PATTERN})]


class Position(DefinitionModel):
    x: float = 0
    y: float = 0


class Viewport(DefinitionModel):
    x: float = 0
    y: float = 0
    zoom: float = Field(default=1, gt=0)


class Canvas(DefinitionModel):
    viewport: Viewport = Field(default_factory=Viewport)


# The least of a step's timeout and backoffs, checked at save time (validation.py) and
# stated in the document: Temporal keeps durations in whole microseconds, and one that
# rounds to none is refused by its SDK in every workflow task, the run pending for good.
# Not a bound of the field itself, which parses the snapshots of runs already going.
MIN_STEP_SECONDS = 0.001
_AT_LEAST_A_MILLISECOND: JsonDict = {"minimum": MIN_STEP_SECONDS}


class StepConfig(DefinitionModel):
    """Retry and error policy of a step; becomes the activity's Temporal retry policy."""

    max_retries: Annotated[int, Field(ge=0, le=100), INTEGRAL] = 0
    on_error: OnError = "fail"
    backoff_base_seconds: float = Field(
        default=1.0, gt=0, le=86_400, json_schema_extra=_AT_LEAST_A_MILLISECOND
    )
    backoff_max_seconds: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="At least backoffBaseSeconds (checked at save time).",
        json_schema_extra=_AT_LEAST_A_MILLISECOND,
    )
    # Per-attempt start-to-close timeout (an extension of the contract).
    timeout_seconds: float = Field(
        default=300.0, gt=0, le=7 * 86_400, json_schema_extra=_AT_LEAST_A_MILLISECOND
    )


class LoopConfig(DefinitionModel):
    max_iterations: Annotated[int, Field(ge=1, le=10_000), INTEGRAL]
    end_condition_cel: NonEmpty | None = Field(default=None, max_length=MAX_EXPRESSION_LENGTH)


class UserInputField(DefinitionModel):
    """An authoring-time form field of a `requiresUserInput` gate."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    field_type: AuthoringFieldType = "string"
    description: str | None = Field(default=None, max_length=MAX_MESSAGE_LENGTH)
    required: bool = True
    default_value: Any = None
    allowed_values: list[Any] | None = None


_GATE_FLAGS = (
    "requiresConfirmation",
    "requiresUserInput",
    "requiresOutputReview",
    "requiresIterationReview",
)


def _given(field: str) -> dict[str, Any]:
    return {"required": [field], "properties": {field: {"minItems": 1}}}


def _on(flag: str) -> dict[str, Any]:
    return {"required": [flag], "properties": {flag: {"const": True}}}


class HumanReview(DefinitionModel):
    """Per-node human-in-the-loop configuration (HITL v2)."""

    # Save-time rules (validation.py) the document can say: approvers need a gate to
    # decide, and a form's fields need requiresUserInput.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"if": _given("approvers"), "then": {"anyOf": [_on(f) for f in _GATE_FLAGS]}},
                {"if": _given("userInputSchema"), "then": _on("requiresUserInput")},
            ]
        }
    )

    requires_confirmation: bool = False
    confirmation_message: str | None = Field(default=None, max_length=MAX_MESSAGE_LENGTH)
    requires_user_input: bool = False
    user_input_message: str | None = Field(default=None, max_length=MAX_MESSAGE_LENGTH)
    user_input_schema: list[UserInputField] = Field(
        default_factory=list,
        max_length=100,
        description="Each field name at most once (checked at save time: JSON Schema "
        "cannot say unique by a field).",
    )
    requires_output_review: bool = False
    output_review_message: str | None = Field(default=None, max_length=MAX_MESSAGE_LENGTH)
    requires_iteration_review: bool = False
    iteration_review_message: str | None = Field(default=None, max_length=MAX_MESSAGE_LENGTH)
    on_reject: OnReject = "skip"
    timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_GATE_TIMEOUT_SECONDS)
    on_timeout: OnTimeout = "cancel"
    # How often a rejected review may send the step round again (onReject=retry).
    max_retries: Annotated[int, Field(ge=0, le=100), INTEGRAL] = 3
    allow_multiple_selections: bool = False
    # Who may decide this node's gates (`user:<sub>`, `role:<role>`); empty: anyone who
    # may control the workflow's runs.
    approvers: list[Approver] = Field(
        default_factory=list, max_length=MAX_APPROVERS, json_schema_extra={"uniqueItems": True}
    )

    def is_active(self) -> bool:
        return (
            self.requires_confirmation
            or self.requires_user_input
            or self.requires_output_review
            or self.requires_iteration_review
        )


class RouterChoice(DefinitionModel):
    # No min_length: save time refuses an empty name with its own message (the pattern
    # says it to the document).
    name: Name = Field(max_length=MAX_NAME_LENGTH)
    steps: list[WorkflowNode] = Field(default_factory=list)


class WorkflowNode(DefinitionModel):
    """One node of the tree. Every container field is always present (empty when unused)."""

    id: NodeId | None = Field(default=None, max_length=128)
    name: Name = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    node_type: NodeType
    position: Position = Field(default_factory=Position)
    executor_key: NonEmpty | None = Field(default=None, max_length=MAX_NAME_LENGTH)
    a2a_pool: list[str] = Field(
        default_factory=list,
        alias="a2aPool",
        json_schema_extra={"maxItems": MAX_POOL, "uniqueItems": True},
    )
    step_config: StepConfig | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    children: list[WorkflowNode] = Field(default_factory=list)
    true_steps: list[WorkflowNode] = Field(default_factory=list)
    false_steps: list[WorkflowNode] = Field(default_factory=list)
    choices: list[RouterChoice] = Field(default_factory=list)
    condition_cel: NonEmpty | None = Field(default=None, max_length=MAX_EXPRESSION_LENGTH)
    loop_config: LoopConfig | None = None
    human_review: HumanReview | None = None
    # map nodes (an extension): the CEL list whose items each run the children.
    items_cel: NonEmpty | None = Field(default=None, max_length=MAX_EXPRESSION_LENGTH)
    # parallel and map nodes (an extension): at most this many branches at a time
    # (default: the workflow's maxConcurrency).
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY), INTEGRAL] | None = None

    @property
    def node_id(self) -> str:
        """The id; definitions are normalised on save, so it is always set at run time."""
        assert self.id is not None, "node ids are assigned when a definition is saved"
        return self.id

    def child_sequences(self) -> list[tuple[str, list[WorkflowNode]]]:
        """Every nested sequence of this node, labelled by where it hangs."""
        seqs: list[tuple[str, list[WorkflowNode]]] = [
            ("children", self.children),
            ("trueSteps", self.true_steps),
            ("falseSteps", self.false_steps),
        ]
        seqs += [(f"choices[{c.name}]", c.steps) for c in self.choices]
        return [(label, nodes) for label, nodes in seqs if nodes]


class WorkflowSpec(DefinitionModel):
    """The executable part of a definition: what a run is pinned to."""

    name: WorkflowName = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)
    canvas: Canvas = Field(default_factory=Canvas)
    # Save time refuses an empty tree (with its own message); the schema says so too.
    nodes: list[WorkflowNode] = Field(json_schema_extra={"minItems": 1})
    # Bound on concurrently running branches of a parallel or map node (an extension).
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY), INTEGRAL] = 8


def iter_nodes(nodes: list[WorkflowNode]) -> list[WorkflowNode]:
    """All nodes of a tree, depth-first in document order."""
    out: list[WorkflowNode] = []
    for node in nodes:
        out.append(node)
        for _, seq in node.child_sequences():
            out.extend(iter_nodes(seq))
    return out


def approvers_by_step(nodes: list[WorkflowNode]) -> dict[str, list[str]]:
    """Node id -> the approvers its humanReview names (nodes naming none left out)."""
    return {
        node.id: list(node.human_review.approvers)
        for node in iter_nodes(nodes)
        if node.id and node.human_review is not None and node.human_review.approvers
    }


def iter_nodes_at(nodes: list[WorkflowNode], path: str = "nodes") -> list[tuple[str, WorkflowNode]]:
    """All nodes of a tree with their paths (`nodes[1].trueSteps[0]`), as `iter_nodes`."""
    out: list[tuple[str, WorkflowNode]] = []
    for i, node in enumerate(nodes):
        at = f"{path}[{i}]"
        out.append((at, node))
        for label, seq in node.child_sequences():
            out.extend(iter_nodes_at(seq, f"{at}.{label}"))
    return out


RouterChoice.model_rebuild()
WorkflowNode.model_rebuild()
