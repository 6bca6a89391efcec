"""CEL evaluation and `{{ … }}` templates: pure functions, safe inside the workflow sandbox.

Compiled programs are cached by source text; compiling is deterministic, so the cache
only saves time. Nothing here runs at import time beyond building the environment.
"""

from __future__ import annotations

import re
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

# The names a CEL expression or template may read (documented in docs/semantics.md).
SCOPE_VARIABLES = frozenset(
    {
        "input",
        "previous_step_content",
        "previous_step_outputs",
        "additional_data",
        "session_state",
        "step_choices",
        "user_input",
        "rejection_feedback",
        "iteration",
        "iteration_outputs",
        "loop_outputs",
    }
)

_TEMPLATE = re.compile(r"\{\{\s*(.+?)\s*\}\}", re.DOTALL)
_BARE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


class ExpressionError(ValueError):
    """A CEL expression that does not parse, or fails or mistypes when evaluated."""


def _program(source: str) -> Any:
    program = _PROGRAMS.get(source)
    if program is None:
        try:
            program = _ENV.program(_ENV.compile(source))
        except CELParseError as exc:
            raise ExpressionError(_parse_message(source, exc)) from None
        _PROGRAMS[source] = program
    return program


def _parse_message(source: str, exc: Exception) -> str:
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    where = f" at line {line}, column {column}" if line is not None else ""
    first = str(exc.args[0]).splitlines()[0] if exc.args else str(exc)
    return f"CEL syntax error{where} in {source!r}: {first}".strip()


def check_expression(source: str) -> None:
    """Parse a CEL expression; raise ExpressionError naming the position when it is invalid."""
    if not source or not source.strip():
        raise ExpressionError("CEL expression is empty")
    _program(source)


def template_expressions(text: str) -> list[str]:
    """The CEL sources inside a template string, bare names rewritten to `input.<name>`."""
    return [_template_source(m.group(1)) for m in _TEMPLATE.finditer(text)]


def _template_source(expr: str) -> str:
    if _BARE_NAME.match(expr) and expr not in SCOPE_VARIABLES:
        return f"input.{expr}"
    return expr


def to_cel(value: Any) -> Any:
    """A JSON-like Python value as a CEL value."""
    return json_to_cel(value)


def from_cel(value: Any) -> Any:
    """A CEL value as plain JSON-like Python."""
    if value is None or isinstance(value, celtypes.NullType):
        return None
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
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
    return value


def evaluate(source: str, scope: dict[str, Any]) -> Any:
    """Evaluate a CEL expression over a scope of JSON-like values; return plain Python."""
    activation = {name: to_cel(value) for name, value in scope.items()}
    try:
        result = _program(source).evaluate(activation)
    except CELEvalError as exc:
        detail = str(exc.args[0] if exc.args else exc).split(" (in activation")[0]
        raise ExpressionError(f"CEL evaluation of {source!r} failed: {detail}") from None
    except Exception as exc:  # cel-python raises plain errors for some type mismatches
        detail = str(exc)[:500]
        raise ExpressionError(f"CEL evaluation of {source!r} failed: {detail}") from None
    return from_cel(result)


def render(value: Any, scope: dict[str, Any]) -> Any:
    """Render `{{ … }}` templates inside a config value, recursively.

    A string that is exactly one template keeps the expression's type; templates
    embedded in longer text render as text (JSON-like values as compact JSON).
    """
    if isinstance(value, str):
        return _render_string(value, scope)
    if isinstance(value, dict):
        return {k: render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value


def _render_string(text: str, scope: dict[str, Any]) -> Any:
    if "{{" not in text:
        return text
    whole = _TEMPLATE.fullmatch(text.strip())
    if whole:
        return evaluate(_template_source(whole.group(1)), scope)
    return _TEMPLATE.sub(lambda m: _as_text(evaluate(_template_source(m.group(1)), scope)), text)


def _as_text(value: Any) -> str:
    import json

    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
