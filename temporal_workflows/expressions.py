"""CEL evaluation and `{{ … }}` templates: pure functions, safe inside the workflow sandbox.

Compiled programs are cached by source text; compiling is deterministic, so the cache
only saves time (in a workflow task compiling is paid from the task's share, once per
source and share, cached or not: `_paid_program`). Nothing here runs at import time
beyond building the environments.
`templates.template_parts` is the one place a string is cut into text and expressions:
`render` (run time) and `template_expressions` (save time) both use it, so a definition
that saves evaluates exactly the expressions that were checked. Every evaluation runs
under a step budget (`cel_budget`); a whole config renders under one. The rules are in
docs/semantics.md.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError
from temporalio import workflow

from temporal_workflows.cel_budget import (
    FUNCTIONS,
    ITERATION_STEPS,
    Budget,
    BudgetedRunner,
    BudgetExceeded,
    charge_result,
    charge_variable,
    charging,
    compile_steps,
    compiling_charged,
    fresh_budget,
    least_steps,
    release,
    static_problem,
)
from temporal_workflows.cel_messages import CEL_TYPE_NAMES, in_cel_words
from temporal_workflows.cel_names import (
    BARE_NAME,
    MACROS,
    SCOPE_VARIABLES,
    called_names,
    free_names,
)
from temporal_workflows.templates import Placeholder, template_parts

_ENV = celpy.Environment(runner_class=BudgetedRunner)
_PLAIN_ENV = celpy.Environment()
# Per source: the program, every name token in it (the scope variables to convert), the
# identifiers it reads unbound, the fewest steps it takes, the functions it calls (the
# save-time checks) and the steps compiling it costs. The least recently used go once the
# sources kept pass PROGRAMS_KEPT_CHARS: a compiled program takes a few hundred times its
# source's size (a thousand 3.9 KB expressions saved grew the API by 1.4 GB, for good), or
# once their compiling steps pass PROGRAMS_KEPT_STEPS (about 100,000 syntax-tree nodes):
# every node is objects the garbage collector walks, and 200 kept programs of 9,000 nodes
# each made its full collections take 2-3 s, inside workflow tasks.
_Program = tuple[Any, frozenset[str], tuple[str, ...], int, tuple[str, ...], int]
_PROGRAMS: OrderedDict[str, _Program] = OrderedDict()
PROGRAMS_KEPT_CHARS = 1_000_000
PROGRAMS_KEPT_STEPS = 400_000
_kept_chars = 0
_kept_steps = 0
# Workflow tasks run on the worker's threads; the API's save checks on another.
_PROGRAMS_LOCK = threading.Lock()
# Runs whose history has no marker of it compile uncharged, and replay as they ran: the
# charge moves where slices end and may fail an evaluation on the task's share.
COMPILE_CHARGE_PATCH = "cel-compiling-charged-to-the-task-share"


class ExpressionError(ValueError):
    """A CEL expression that does not parse, or fails or mistypes when evaluated."""


def _program(source: str) -> _Program:
    """The compiled program, the names it may read, those it reads unbound and the fewest
    steps it takes; ExpressionError if it cannot run."""
    with _PROGRAMS_LOCK:
        found = _PROGRAMS.get(source)
        if found is not None:
            _PROGRAMS.move_to_end(source)
    if found is None:
        try:
            ast = _ENV.compile(source)
        except CELParseError as exc:
            raise ExpressionError(_parse_message(source, exc)) from None
        problem = static_problem(ast)
        if problem is not None:
            raise ExpressionError(f"CEL expression {_brief(source)} is too costly: {problem}")
        names = frozenset(str(t) for t in ast.scan_values(lambda v: isinstance(v, str)))
        program = _ENV.program(ast, functions=FUNCTIONS)
        compiling = compile_steps(sum(1 for _ in ast.iter_subtrees()), len(source))
        found = (
            program,
            names,
            tuple(free_names(ast)),
            least_steps(ast),
            tuple(called_names(ast)),
            compiling,
        )
        _keep(source, found)
    return found


def _paid_program(source: str, budget: Budget) -> _Program:
    """`_program`, its compiling paid from the workflow task's share: once per source and
    share, whether or not this process had it compiled (a replay, another worker, the
    bounded cache: the charge must not depend on them). A task compiling hundreds of
    distinct long expressions ran for minutes while only their evaluating was charged."""
    share = budget.shared
    if share is None or not compiling_charged(_compile_patched):
        return _program(source)
    found: _Program | None = share.compiled.get(source)
    if found is None:
        found = share.compiled[source] = _program(source)
        try:
            share.spend(found[5])
        except BudgetExceeded as exc:
            raise ExpressionError(
                f"CEL evaluation of {_brief(source)} stopped: compiling it: {exc} (see "
                "'What an expression may cost' in docs/semantics.md)"
            ) from None
    return found


def _keep(source: str, program: _Program) -> None:
    """Keep a program, and let the least recently used go past the bound."""
    global _kept_chars, _kept_steps
    with _PROGRAMS_LOCK:
        if source in _PROGRAMS:  # compiled at once by another thread (workflow tasks)
            return
        _PROGRAMS[source] = program
        _kept_chars += len(source)
        _kept_steps += program[5]
        while (_kept_chars > PROGRAMS_KEPT_CHARS or _kept_steps > PROGRAMS_KEPT_STEPS) and len(
            _PROGRAMS
        ) > 1:
            dropped, gone = _PROGRAMS.popitem(last=False)
            _kept_chars -= len(dropped)
            _kept_steps -= gone[5]


def _brief(source: str) -> str:
    return repr(source if len(source) <= 200 else source[:200] + "…")


def _parse_message(source: str, exc: Exception) -> str:
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    where = f" at line {line}, column {column}" if line is not None else ""
    first = str(exc.args[0]).splitlines()[0] if exc.args else str(exc)
    return f"CEL syntax error{where} in {_brief(source)}: {first}".strip()


def check_expression(source: str) -> None:
    """Parse a CEL expression; raise ExpressionError naming the position when it is invalid,
    saying why it cannot fit its budget, or naming a variable no scope has or a function
    CEL does not have (a misspelt `inptu` or `sise()` would fail every evaluation that
    reaches it)."""
    if not source or not source.strip():
        raise ExpressionError("CEL expression is empty")
    program = _program(source)
    for function in program[4]:
        if function.startswith("."):
            # cel-python yields the function itself for `.size(x)`: a run carrying it
            # failed its workflow task for good (the run stayed pending).
            raise ExpressionError(
                f"CEL expression {_brief(source)} calls {function!r} with a leading dot, "
                f"which cel-python does not evaluate; write {function[1:]}(…)"
            )
        if function not in FUNCTIONS and function not in MACROS:
            known = sorted(n for n in (*FUNCTIONS, *MACROS) if BARE_NAME.match(n))
            close = difflib.get_close_matches(function, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ExpressionError(
                f"CEL expression {_brief(source)} calls {function!r}, which is no CEL "
                f"function{hint}; docs/semantics.md lists them"
            )
    for name in program[2]:
        if name not in SCOPE_VARIABLES and not _cel_name(name):
            close = difflib.get_close_matches(name, SCOPE_VARIABLES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ExpressionError(
                f"CEL expression {_brief(source)} reads {name!r}, which is no variable"
                f"{hint}; the variables are {', '.join(sorted(SCOPE_VARIABLES))}"
            )


def fewest_steps(sources: list[str]) -> int:
    """The fewest steps evaluating all of `sources` under one budget takes, each with its
    evaluation's own ITERATION_STEPS (each must be valid: `check_expression` first)."""
    return sum(_program(source)[3] + ITERATION_STEPS for source in sources)


def _compile_patched() -> bool:
    return not workflow.in_workflow() or workflow.patched(COMPILE_CHARGE_PATCH)


def compiling_steps(sources: list[str]) -> int:
    """The steps compiling all of `sources` costs a workflow task's share (each must be
    valid: `check_expression` first)."""
    return sum(_program(source)[5] for source in sources)


@functools.cache
def _cel_name(name: str) -> bool:
    """Whether CEL itself knows the name (a type such as `int` or `map`, `google`)."""
    try:
        _PLAIN_ENV.program(_PLAIN_ENV.compile(name)).evaluate({})
    except Exception:
        return False
    return True


def template_expressions(text: str) -> list[str]:
    """The CEL sources a template string evaluates; raise ExpressionError for an unclosed `{{`."""
    parts = template_parts(text)
    if parts and isinstance(parts[-1], str) and "{{" in parts[-1]:
        at = len(text) - len(parts[-1]) + parts[-1].index("{{")
        raise ExpressionError(f"template at character {at} of {text!r} has no closing }}}}")
    return [part.source for part in parts if isinstance(part, Placeholder)]


def to_cel(value: Any) -> Any:
    """A JSON-like Python value as a CEL value."""
    return json_to_cel(value)


def _variable(source: str, name: str, value: Any, budget: Budget) -> Any:
    """One variable as a CEL value, its conversion paid from `budget`; data CEL cannot
    hold, or too much of it to convert, fails the evaluation, not the task.

    cel-python refuses integers outside 64 bits with a plain ValueError: raised out of the
    workflow code it failed the workflow task, which Temporal retried forever (the run
    never left `pending`/`running`). Such a number may come from a run's input or a step's
    output; evaluations that do not name that variable are not affected.
    """
    try:
        charge_variable(budget, value)
    except BudgetExceeded as exc:
        raise ExpressionError(
            f"CEL evaluation of {_brief(source)} stopped: converting {name} for it: {exc} "
            f"(each evaluation may take {budget.limit}; see 'What an expression may cost' "
            "in docs/semantics.md)"
        ) from None
    try:
        return to_cel(value)
    except ValueError:
        where = _wide_integer(value, name) or name
        raise ExpressionError(
            f"CEL evaluation of {_brief(source)} failed: {where} is an integer outside "
            f"CEL's 64-bit range ({CEL_INT_MIN}..{CEL_INT_MAX})"
        ) from None
    except RecursionError:
        raise ExpressionError(
            f"CEL evaluation of {_brief(source)} failed: {name} nests too deeply"
        ) from None


CEL_INT_MIN = -(2**63)
CEL_INT_MAX = 2**63 - 1


def _wide_integer(value: Any, path: str) -> str | None:
    """The path of the first integer CEL cannot hold inside a JSON-like value."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if CEL_INT_MIN <= value <= CEL_INT_MAX else path
    if isinstance(value, dict):
        items: Any = ((f"{path}.{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub_path, sub in items:
        found = _wide_integer(sub, sub_path)
        if found is not None:
            return found
    return None


def from_cel(value: Any) -> Any:
    """A CEL value as plain JSON-like Python."""
    if value is None or isinstance(value, celtypes.NullType):
        return None
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        number = float(value)
        if not math.isfinite(number) and _non_finite_fails():
            raise ExpressionError(
                f"it yields the double {number} (a division by zero?), which JSON cannot carry"
            )
        return number
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, celtypes.MapType):
        return {str(from_cel(k)): from_cel(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [from_cel(v) for v in value]
    if isinstance(value, (celtypes.TimestampType, celtypes.DurationType)):
        return str(value)
    if callable(value) and not isinstance(value, type):
        # `.size([1])`: cel-python yields the function; serializing it failed the workflow
        # task for good (the run stayed pending). Refused at save too (check_expression).
        raise ExpressionError("it yields a function, which is not a value a step can use")
    if isinstance(value, type):
        # `type(x)`, `int`: not data. Returned as is, it failed the workflow task when the
        # output was serialized (retried forever: the run hung); now it fails the node.
        name = CEL_TYPE_NAMES.get(value, value.__name__)
        raise ExpressionError(f"it yields the type {name}, which is not a value a step can use")
    return value


NON_FINITE_PATCH = "cel-non-finite-double-fails"


def _non_finite_fails() -> bool:
    """Whether a non-finite double fails its expression: runs before this rule passed it
    on (JSON made it null, text "Infinity") and replay as they ran."""
    return not workflow.in_workflow() or workflow.patched(NON_FINITE_PATCH)


# How much of a value a message shows.
SHOWN_CHARS = 200


def described(value: Any) -> str:
    """A CEL value as messages show it: its CEL type and its literal, cut at SHOWN_CHARS
    ("string 'yes'", "map {'a': 1}", "null")."""
    if value is None or isinstance(value, celtypes.NullType):
        return "null"
    name = CEL_TYPE_NAMES.get(type(value), type(value).__name__)
    shown = ""
    # Piece by piece, so a huge or deeply nested value is read no further than shown.
    for piece in _literal(value):
        shown += piece
        if len(shown) > SHOWN_CHARS:
            return f"{name} {shown[:SHOWN_CHARS]}…"
    return f"{name} {shown}"


def _literal(value: Any) -> Iterator[str]:
    """A CEL value as CEL would write it, in pieces."""
    if value is None or isinstance(value, celtypes.NullType):
        yield "null"
    elif isinstance(value, bool | celtypes.BoolType):
        yield "true" if value else "false"
    elif isinstance(value, celtypes.UintType):
        yield f"{int(value)}u"
    elif isinstance(value, str):
        yield repr(str(value[: SHOWN_CHARS + 1]))
    elif isinstance(value, bytes):
        yield repr(bytes(value[: SHOWN_CHARS + 1]))
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ", " if i else ""
            yield from _literal(key)
            yield ": "
            yield from _literal(item)
        yield "}"
    elif isinstance(value, list):
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _literal(item)
        yield "]"
    elif isinstance(value, celtypes.TimestampType | celtypes.DurationType):
        yield f"{'timestamp' if isinstance(value, celtypes.TimestampType) else 'duration'}("
        yield f"{str(value)!r})"
    elif isinstance(value, float):
        yield repr(float(value))
    elif isinstance(value, int):
        yield str(int(value))
    else:
        yield repr(value)


@dataclass(frozen=True)
class Evaluation:
    """What an expression yielded: `value` as plain Python, and `cel` as CEL made it (its
    CEL type, which the plain value may have lost: a uint, bytes)."""

    value: Any
    cel: Any

    def not_yielding(self, field: str, wanted: str) -> str:
        """Why `field` fails on this value, worded alike for every field that takes one:
        "conditionCel must yield a bool, got string 'yes'"."""
        return f"{field} must yield {wanted}, got {described(self.cel)}"


def evaluate(source: str, scope: dict[str, Any], budget: Budget | None = None) -> Any:
    """Evaluate a CEL expression over a scope of JSON-like values; return plain Python.

    It spends `budget` (a fresh one when None: see `fresh_budget`); running out is an
    ExpressionError.
    """
    return evaluation(source, scope, budget).value


def evaluation(source: str, scope: dict[str, Any], budget: Budget | None = None) -> Evaluation:
    """`evaluate`, keeping the value as CEL made it too (for messages naming its type)."""
    budget = budget or fresh_budget()
    program, names, *_ = _paid_program(source, budget)
    # Only the variables the expression names: converting every step's outputs is costly.
    activation = {
        name: _variable(source, name, scope[name], budget) for name in names if name in scope
    }
    token = charging(budget)
    try:
        result = program.evaluate(activation)
        charge_result(budget, result)
    except BudgetExceeded as exc:
        raise ExpressionError(
            f"CEL evaluation of {_brief(source)} stopped: {exc} (each evaluation may take "
            f"{budget.limit}; see 'What an expression may cost' in docs/semantics.md)"
        ) from None
    except CELEvalError as exc:
        detail = in_cel_words(str(exc.args[0] if exc.args else exc).split(" (in activation")[0])
        raise ExpressionError(f"CEL evaluation of {_brief(source)} failed: {detail}") from None
    except RecursionError:
        raise ExpressionError(f"CEL evaluation of {_brief(source)} nests too deeply") from None
    except Exception as exc:  # cel-python raises plain errors for some type mismatches
        detail = str(exc)[:500]
        raise ExpressionError(f"CEL evaluation of {_brief(source)} failed: {detail}") from None
    finally:
        release(token)
    try:
        return Evaluation(from_cel(result), result)
    except ExpressionError as exc:
        raise ExpressionError(f"CEL evaluation of {_brief(source)} failed: {exc}") from None


def render(
    value: Any,
    scope: dict[str, Any],
    budget: Budget | None = None,
    *,
    keep_unicode: bool = False,
) -> Any:
    """Render `{{ … }}` templates inside a config value, recursively, all under one budget.

    A string that is exactly one template keeps the expression's type; any other string
    with templates renders as text (JSON-like values as compact JSON, non-ASCII characters
    escaped unless `keep_unicode`: runs started before it replay as they rendered).
    """
    budget = budget or fresh_budget()
    if isinstance(value, str):
        return _render_string(value, scope, budget, keep_unicode)
    if isinstance(value, dict):
        return {k: render(v, scope, budget, keep_unicode=keep_unicode) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope, budget, keep_unicode=keep_unicode) for v in value]
    return value


def _render_string(text: str, scope: dict[str, Any], budget: Budget, keep_unicode: bool) -> Any:
    if "{{" not in text:
        return text
    parts = template_parts(text)
    # Exactly one placeholder (whitespace around it aside) keeps the expression's type.
    core = [part for part in parts if not (isinstance(part, str) and not part.strip())]
    if len(core) == 1 and isinstance(core[0], Placeholder):
        return evaluate(core[0].source, scope, budget)
    return "".join(
        part
        if isinstance(part, str)
        else _as_text(evaluate(part.source, scope, budget), keep_unicode)
        for part in parts
    )


def _as_text(value: Any, keep_unicode: bool) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=not keep_unicode)
