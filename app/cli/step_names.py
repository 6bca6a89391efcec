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
    step of that name; else that of a nested step of that name, which the API refuses as it
    refuses one given by its id ("Nested node rerun is not supported": sent as an id, the
    name was its 404 "not found"); else `given` (the API says it names no node). Two or
    more top-level steps of that name: a usage error naming their ids, since either could
    be meant."""
    nodes = _list(definition.get("nodes"))
    if given in {node.get("id") for node in _all(nodes)}:
        return given
    named = _named(nodes, given)
    if len(named) > 1:
        raise click.UsageError(
            f"{len(named)} top-level steps are named {given!r}: give the id of one of them "
            f"({', '.join(named)})"
        )
    # Any of several nested ones: the API's answer is the same for each.
    nested = _named([inner for node in nodes for inner in _inside(node)], given)
    return (named or nested or [given])[0]


def _named(nodes: list[dict[str, Any]], name: str) -> list[str]:
    return [str(n.get("id")) for n in nodes if n.get("name") == name and n.get("id")]


def _all(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every node, nested ones too (an id is unique in the whole definition)."""
    for node in nodes:
        yield node
        yield from _inside(node)


def _inside(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node nested in `node`, at any depth."""
    for key in _SEQUENCES:
        yield from _all(_list(node.get(key)))
    for choice in _list(node.get("choices")):
        yield from _all(_list(choice.get("steps")))


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
