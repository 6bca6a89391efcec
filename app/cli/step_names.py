"""A step named by its name where its id is asked for (`runs rerun RUN NODE`): people read
names in `runs show` and the console, and the API knows a node by its id only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

# Where a definition's nodes hold nodes (the API's camelCase, as a run's snapshot has it).
_SEQUENCES = ("children", "trueSteps", "falseSteps")


def node_id_of(definition: dict[str, Any], given: str) -> str:
    """`given` when it is the id of a node of `definition`; else the id of its one top-level
    step of that name; else `given` (the API says it names no node). Two or more steps of
    that name: a usage error naming their ids, since either could be meant."""
    nodes = _list(definition.get("nodes"))
    if given in {node.get("id") for node in _all(nodes)}:
        return given
    named = [str(n.get("id")) for n in nodes if n.get("name") == given and n.get("id")]
    if len(named) > 1:
        raise click.UsageError(
            f"{len(named)} top-level steps are named {given!r}: give the id of one of them "
            f"({', '.join(named)})"
        )
    return named[0] if named else given


def _all(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every node, nested ones too (an id is unique in the whole definition)."""
    for node in nodes:
        yield node
        for key in _SEQUENCES:
            yield from _all(_list(node.get(key)))
        for choice in _list(node.get("choices")):
            yield from _all(_list(choice.get("steps")))


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
