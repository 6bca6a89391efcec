"""The pure built-in executors, `builtin:echo` and `builtin:transform`: one implementation.

Pure, so the interpreter evaluates them inside the workflow (no activity at all); the
step activity's built-in executor calls the same functions for direct calls.
"""

from __future__ import annotations

from typing import Any

from temporal_workflows.cel_budget import fresh_budget
from temporal_workflows.expressions import ExpressionError, evaluate

ECHO = "builtin:echo"
TRANSFORM = "builtin:transform"
PURE_BUILTINS = frozenset({ECHO, TRANSFORM})


class BuiltinError(ValueError):
    """A pure built-in that cannot produce an output (retrying would not help)."""


def echo(config: dict[str, Any], run_input: Any) -> dict[str, Any]:
    """The rendered config and the run's input.

    Only these, not the whole context: echoing previous outputs would make a chain of
    echo steps grow its payload exponentially.
    """
    return {"config": config, "input": run_input}


def transform(config: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
    """`config.map` (name -> CEL expression), each evaluated over the step's variables
    (all of them under one budget)."""
    mapping = config.get("map")
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise BuiltinError("builtin:transform needs config.map: an object of CEL expressions")
    try:
        budget = fresh_budget()
        return {name: evaluate(source, variables, budget) for name, source in mapping.items()}
    except ExpressionError as exc:
        raise BuiltinError(str(exc)) from None


def run_pure(key: str, config: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
    """The output of a pure built-in for a rendered config and the step's variables."""
    if key == ECHO:
        return echo(config, variables.get("input"))
    return transform(config, variables)
