"""Save-time rules of a definition: node shapes, ids, HITL compatibility, CEL, limits.

Every problem is reported with the node's path and name, so a 400 says exactly what
to fix. Executor keys are checked elsewhere (they need the live catalog).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from temporal_workflows.cel_budget import EVALUATION_STEPS, MAX_COMPILE_STEPS
from temporal_workflows.definition import (
    MAX_EXPRESSION_LENGTH,
    MAX_POOL,
    MIN_STEP_SECONDS,
    NODE_ID_REGEX,
    HumanReview,
    WorkflowNode,
    WorkflowSpec,
    iter_nodes,
)
from temporal_workflows.expressions import (
    ExpressionError,
    check_expression,
    compiling_steps,
    fewest_steps,
    template_expressions,
)
from temporal_workflows.gates import value_problem
from temporal_workflows.json_data import data_problem
from temporal_workflows.principals import principal_problem

MAX_DEPTH = 12
MAX_NODES = 5_000
# All the CEL a definition holds (conditions, templates, transform maps), counted before
# any is parsed: parsing takes 5-60 microseconds a character on a loaded two-core machine,
# and saves are checked one at a time (app/services/beside_loop.py), so 1.6 MB of it held
# every other save for a minute.
MAX_DEFINITION_CEL_CHARS = 100_000
# How a step's `a2aPool` is ordered (`config.poolStrategy`; activities/executors/pool.py).
POOL_STRATEGIES = ("failover", "round_robin", "skill_match")
NODE_ID_PATTERN = re.compile(NODE_ID_REGEX)


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class DefinitionError(ValueError):
    """A definition that breaks one or more save-time rules."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def normalise(spec: WorkflowSpec, new_id: Callable[[], str]) -> WorkflowSpec:
    """Assign ids to nodes without one, then check every rule; raise DefinitionError.

    The workflow's name is kept in Unicode's composed form (NFC) without the whitespace
    around it: "Café" typed with a combining accent, or with a space after it, was another
    workflow's name, which a list and a search showed alike (and `workflows apply` finds a
    workflow by its name)."""
    spec.name = unicodedata.normalize("NFC", spec.name).strip()
    for node in iter_nodes(spec.nodes):
        if node.id is None:
            node.id = new_id()
    problems = check(spec)
    if problems:
        raise DefinitionError(problems)
    return spec


def check(spec: WorkflowSpec) -> list[Problem]:
    """All rule violations of a definition whose node ids are assigned."""
    problems: list[Problem] = []
    if not spec.name.strip():
        problems.append(Problem("name", "must not be blank"))
    if control := _control_character(spec.name):
        problems.append(Problem("name", f"must not hold control characters ({control})"))
    if not spec.nodes:
        problems.append(Problem("nodes", "at least one root node is required"))
    viewport = spec.canvas.viewport
    problems.extend(
        Problem(f"canvas.viewport.{axis}", "must be a finite number")
        for axis, value in (("x", viewport.x), ("y", viewport.y), ("zoom", viewport.zoom))
        if not math.isfinite(value)
    )
    count = sum(1 for _ in iter_nodes(spec.nodes))
    if count > MAX_NODES:
        # Alone, and before the rest: checking every rule of 150,000 nodes took seconds,
        # only to refuse them.
        return [*problems, Problem("nodes", f"{count} nodes exceed the limit of {MAX_NODES}")]
    cel_chars = sum(
        len(source)
        for node in iter_nodes(spec.nodes)
        for group in _cel(node)[:3]
        for _, source in group
    )
    if cel_chars > MAX_DEFINITION_CEL_CHARS:
        # Alone too: the point is not to parse it.
        message = (
            f"its CEL expressions hold {cel_chars} characters together; at most "
            f"{MAX_DEFINITION_CEL_CHARS} may"
        )
        return [*problems, Problem("nodes", message)]
    seen: dict[str, str] = {}

    def visit(node: WorkflowNode, path: str, depth: int, in_map: str | None) -> None:
        where = f"{path} ({node.name!r})"
        if depth > MAX_DEPTH:
            problems.append(Problem(where, f"tree is deeper than {MAX_DEPTH} levels"))
            return
        if not node.name.strip():
            problems.append(Problem(where, "node names must not be blank"))
        if control := _control_character(node.name):
            problems.append(
                Problem(where, f"node names must not hold control characters ({control})")
            )
        node_id = node.node_id
        if not NODE_ID_PATTERN.fullmatch(node_id):
            problems.append(Problem(where, f"node id {node_id!r} is malformed"))
        elif node_id in seen:
            problems.append(Problem(where, f"node id {node_id!r} is also used by {seen[node_id]}"))
        else:
            seen[node_id] = where
        problems.extend(
            Problem(where, f"position.{axis} must be a finite number")
            for axis, value in (("x", node.position.x), ("y", node.position.y))
            if not math.isfinite(value)
        )
        problems.extend(Problem(where, m) for m in _shape(node))
        problems.extend(Problem(where, m) for m in _human_review(node))
        if in_map is not None and node.human_review and node.human_review.is_active():
            # A gate is named by its node id: items running at once would open the
            # same gate twice, and one decision could not say which item it is for.
            problems.append(
                Problem(
                    where,
                    f"humanReview inside map {in_map!r} needs that map's maxConcurrency "
                    "to be 1 (its items would wait at the same gate at once)",
                )
            )
        problems.extend(Problem(where, m) for m in _expressions(node))
        if node.node_type == "map" and (node.max_concurrency or spec.max_concurrency) > 1:
            in_map = in_map or node.name
        for label, seq in node.child_sequences():
            for i, child in enumerate(seq):
                visit(child, f"{path}.{label}[{i}]", depth + 1, in_map)

    for i, node in enumerate(spec.nodes):
        visit(node, f"nodes[{i}]", 1, None)
    return problems


# The type-specific fields each node type may define; the others it must not.
_OWN_FIELDS: dict[str, frozenset[str]] = {
    "step": frozenset({"executorKey", "a2aPool", "stepConfig"}),
    "parallel": frozenset({"children", "maxConcurrency"}),
    "map": frozenset({"children", "itemsCel", "maxConcurrency"}),
    "condition": frozenset({"trueSteps", "falseSteps", "conditionCel"}),
    "loop": frozenset({"children", "loopConfig"}),
    "router": frozenset({"choices", "conditionCel"}),
}


def _forbidden(node: WorkflowNode) -> list[str]:
    present = {
        "executorKey": node.executor_key is not None,
        "a2aPool": bool(node.a2a_pool),
        "children": bool(node.children),
        "trueSteps": bool(node.true_steps),
        "falseSteps": bool(node.false_steps),
        "choices": bool(node.choices),
        "stepConfig": node.step_config is not None,
        "loopConfig": node.loop_config is not None,
        "conditionCel": node.condition_cel is not None,
        "itemsCel": node.items_cel is not None,
        "maxConcurrency": node.max_concurrency is not None,
    }
    allowed = _OWN_FIELDS[node.node_type]
    return [
        f"{node.node_type} nodes must not define {field}"
        for field, defined in present.items()
        if defined and field not in allowed
    ]


def _shape(node: WorkflowNode) -> list[str]:
    return _forbidden(node) + _SHAPES[node.node_type](node)


def _step(node: WorkflowNode) -> list[str]:
    out: list[str] = []
    if (node.executor_key is None) == (not node.a2a_pool):
        out.append("step nodes need exactly one of executorKey or a2aPool")
    if len(node.a2a_pool) > MAX_POOL:
        out.append(f"a2aPool has {len(node.a2a_pool)} agents; at most {MAX_POOL} are allowed")
    if len(set(node.a2a_pool)) != len(node.a2a_pool):
        out.append("a2aPool lists an agent twice")
    if node.executor_key is not None and not node.executor_key.strip():
        out.append("executorKey must not be empty")
    # Only a pool step reads it (checked here); no executor is ever passed it (executors'
    # RESERVED_CONFIG_KEYS), so on another step it is inert.
    strategy = node.config.get("poolStrategy", POOL_STRATEGIES[0])
    if node.a2a_pool and strategy not in POOL_STRATEGIES:
        out.append(
            f"config.poolStrategy {str(strategy)[:60]!r} is unknown; use one of: "
            + ", ".join(POOL_STRATEGIES)
        )
    sc = node.step_config
    if sc and sc.backoff_max_seconds < sc.backoff_base_seconds:
        out.append("stepConfig.backoffMaxSeconds must be >= backoffBaseSeconds")
    if sc:
        for field, value in (
            ("timeoutSeconds", sc.timeout_seconds),
            ("backoffBaseSeconds", sc.backoff_base_seconds),
            ("backoffMaxSeconds", sc.backoff_max_seconds),
        ):
            if value < MIN_STEP_SECONDS:
                out.append(
                    f"stepConfig.{field} must be at least {MIN_STEP_SECONDS} (a millisecond)"
                )
    return out


def _parallel(node: WorkflowNode) -> list[str]:
    out = [] if len(node.children) >= 2 else ["parallel nodes need at least 2 children"]
    # The block's output is {childName: childOutput}: a repeated name would lose an output.
    dupes = _repeated([c.name for c in node.children])
    if dupes:
        out.append(f"parallel children's names must be unique; repeated: {', '.join(dupes)}")
    return out


def _repeated(names: list[str]) -> list[str]:
    """Names given more than once, also as another Unicode form of the same text ("é" as
    one character or as "e" and a combining accent look alike wherever they are shown);
    one not in the composed form is named with its escapes, to tell the two apart."""
    forms = [unicodedata.normalize("NFC", n) for n in names]
    repeated = {n if n == f else ascii(n) for n, f in zip(names, forms, strict=True)
                if forms.count(f) > 1}  # fmt: skip
    return sorted(repeated)


def _map(node: WorkflowNode) -> list[str]:
    out = [] if node.children else ["map nodes need at least 1 child"]
    if not node.items_cel:
        out.append("map nodes need itemsCel")
    return out


def _condition(node: WorkflowNode) -> list[str]:
    out = [] if node.true_steps else ["condition nodes need at least one step in trueSteps"]
    if not node.condition_cel:
        out.append("condition nodes need conditionCel")
    return out


def _loop(node: WorkflowNode) -> list[str]:
    out = [] if node.loop_config is not None else ["loop nodes need loopConfig"]
    if not node.children:
        out.append("loop nodes need at least 1 child")
    return out


def _control_character(text: str) -> str | None:
    """The first control character in a name, as U+XXXX; None when it has none. A NUL, an
    escape sequence or a bell in a name reaches every client that shows it (a terminal's
    colours, a log line cut short), and no name needs one."""
    found = next((c for c in text if unicodedata.category(c) == "Cc"), None)
    return None if found is None else f"U+{ord(found):04X}"


def _router(node: WorkflowNode) -> list[str]:
    out = [] if len(node.choices) >= 2 else ["router nodes need at least 2 choices"]
    names = [c.name for c in node.choices]
    if any(not n.strip() for n in names):
        out.append("router choice names must not be empty")
    if control := next(filter(None, map(_control_character, names)), None):
        out.append(f"router choice names must not hold control characters ({control})")
    dupes = _repeated(names)
    if dupes:
        out.append(f"router choice names must be unique; repeated: {', '.join(dupes)}")
    out += [
        f"router choice {c.name!r} needs at least one step" for c in node.choices if not c.steps
    ]
    if not node.condition_cel:
        out.append("router nodes need conditionCel")
    return out


_SHAPES = {
    "step": _step,
    "parallel": _parallel,
    "map": _map,
    "condition": _condition,
    "loop": _loop,
    "router": _router,
}


# Which HITL fields each node type accepts (the contract's compatibility matrix).
_HITL_ALLOWED: dict[str, set[str]] = {
    "step": {"requiresConfirmation", "requiresUserInput", "requiresOutputReview"},
    "condition": {"requiresConfirmation"},
    "loop": {"requiresConfirmation", "requiresIterationReview"},
    "router": {"requiresConfirmation", "requiresUserInput", "requiresOutputReview"},
    "parallel": set(),
    "map": set(),
}


def _human_review(node: WorkflowNode) -> list[str]:
    hr = node.human_review
    if hr is None:
        return []
    if node.node_type in ("parallel", "map"):
        return [f"{node.node_type} nodes must not define humanReview (branches run concurrently)"]
    flags = {
        "requiresConfirmation": hr.requires_confirmation,
        "requiresUserInput": hr.requires_user_input,
        "requiresOutputReview": hr.requires_output_review,
        "requiresIterationReview": hr.requires_iteration_review,
    }
    allowed = _HITL_ALLOWED[node.node_type]
    out = [
        f"humanReview.{flag} is not supported on {node.node_type} nodes"
        for flag, on in flags.items()
        if on and flag not in allowed
    ]
    if hr.on_reject == "else_branch" and node.node_type != "condition":
        out.append("humanReview.onReject 'else_branch' is only valid on condition nodes")
    names = [f.name for f in hr.user_input_schema]
    if len(set(names)) != len(names):
        out.append("humanReview.userInputSchema field names must be unique")
    if hr.user_input_schema and not hr.requires_user_input:
        out.append("humanReview.userInputSchema needs requiresUserInput")
    out += _form_fields(hr)
    return out + _approvers(hr)


def _form_fields(hr: HumanReview) -> list[str]:
    """A default or allowed value its own field refuses could never be confirmed."""
    out: list[str] = []
    for i, field in enumerate(hr.user_input_schema):
        where = f"humanReview.userInputSchema[{i}] ({field.name[:60]!r})"
        typed = field.model_copy(update={"allowed_values": None})
        unfit = [v for v in field.allowed_values or [] if value_problem(typed, v) is not None]
        if unfit:
            out.append(f"{where}: allowedValues entry {unfit[0]!r} is not a {field.field_type}")
        elif field.default_value is not None:
            problem = value_problem(field, field.default_value)
            if problem is not None:
                out.append(f"{where}: defaultValue {problem}")
    return out


def _approvers(hr: HumanReview) -> list[str]:
    out = [
        f"humanReview.approvers[{i}] {who[:210]!r}: {problem}"
        for i, who in enumerate(hr.approvers)
        if (problem := principal_problem(who))
    ]
    if len(set(hr.approvers)) != len(hr.approvers):
        out.append("humanReview.approvers lists someone twice")
    if hr.approvers and not hr.is_active():
        out.append("humanReview.approvers needs a gate (a requires* flag) to decide")
    return out


_Sources = list[tuple[str, str]]


def _cel(node: WorkflowNode) -> tuple[_Sources, _Sources, _Sources, list[str]]:
    """The CEL expressions a node holds, by field (its own fields', its templates, its
    transform map), and its templates' problems: text work only, nothing parsed."""
    out: list[str] = []
    sources: _Sources = []
    if node.condition_cel is not None:
        sources.append(("conditionCel", node.condition_cel))
    if node.loop_config and node.loop_config.end_condition_cel is not None:
        sources.append(("loopConfig.endConditionCel", node.loop_config.end_condition_cel))
    if node.items_cel is not None:
        sources.append(("itemsCel", node.items_cel))
    templates: _Sources = []
    for key, text in _config_strings(node.config, "config"):
        try:
            templates += [(key, expr) for expr in template_expressions(text)]
        except ExpressionError as exc:
            out.append(f"{key}: {exc}")
    mapping = node.config.get("map")
    transform_map: _Sources = []
    if node.executor_key == "builtin:transform" and isinstance(mapping, dict):
        # builtin:transform's map values are CEL themselves, not templates.
        transform_map = [
            (f"config.map.{name}", src)
            for name, src in mapping.items()
            if isinstance(src, str) and "{{" not in src
        ]
    return sources, templates, transform_map, out


def _expressions(node: WorkflowNode) -> list[str]:
    problem = data_problem(node.config, "config")
    if problem is not None:
        return [problem]
    fields, templates, transform_map, out = _cel(node)
    if node.executor_key == "builtin:transform":
        out += _transform_map(node.config.get("map"))
    valid: set[str] = set()
    for field, source in fields + templates + transform_map:
        if len(source) > MAX_EXPRESSION_LENGTH:
            # Before parsing it: a 400 KB list literal took 42 s to parse.
            out.append(
                f"{field}: CEL expression is {len(source)} characters long; at most "
                f"{MAX_EXPRESSION_LENGTH}"
            )
            continue
        try:
            check_expression(source)
            valid.add(source)
        except ExpressionError as exc:
            out.append(f"{field}: {exc}")
    # A step's whole config renders under one budget, and a transform's whole map is
    # evaluated under another: twelve thousand `{{ 1 }}` saved, and every run failed. Their
    # compiling is paid from the workflow task's share, once a source.
    for what, group in (("its templates", templates), ("config.map", transform_map)):
        valid_sources = [source for _, source in group if source in valid]
        needs = fewest_steps(valid_sources)
        if needs > EVALUATION_STEPS:
            out.append(
                f"config: {what} together take at least {needs} steps to evaluate, whatever "
                f"the data; they share one budget of {EVALUATION_STEPS}"
            )
        compiling = compiling_steps(list(dict.fromkeys(valid_sources)))
        if compiling > MAX_COMPILE_STEPS:
            out.append(
                f"config: {what} together take {compiling} steps to compile; at most "
                f"{MAX_COMPILE_STEPS}"
            )
    for field, source in fields:
        if source in valid and (compiling := compiling_steps([source])) > MAX_COMPILE_STEPS:
            out.append(
                f"{field}: compiling it takes {compiling} steps; at most {MAX_COMPILE_STEPS}"
            )
    return out


def _transform_map(mapping: object) -> list[str]:
    """builtin:transform's `config.map` is known when saved, unless a template makes it."""
    if isinstance(mapping, str) and "{{" in mapping:
        return []
    if not isinstance(mapping, dict):
        return ["builtin:transform needs config.map: an object of CEL expressions"]
    return [
        f"config.map.{name}: a CEL expression (a string) is needed, got {type(src).__name__}"
        for name, src in mapping.items()
        if not isinstance(src, str)
    ]


def _config_strings(value: object, path: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)] if "{{" in value else []
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _config_strings(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in _config_strings(v, f"{path}[{i}]")]
    return []
