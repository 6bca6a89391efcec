"""Node ids for a definition file applied again: the ids its workflow already has.

A file written by hand names no node ids, and the API gives every node without one a new
id. Applied again unchanged, each node would get another id, and each apply would be a new
version that differs only there. A node of the file without an id therefore takes the id
of the node in the same place of the stored definition, when its name and type match.
"""

from __future__ import annotations

from typing import Any

_SEQUENCES = ("children", "trueSteps", "falseSteps")
# The API takes a field by its snake_case name too: a file may be written either way.
_SNAKE = {"nodeType": "node_type", "trueSteps": "true_steps", "falseSteps": "false_steps"}


def carry_ids(given: list[Any], stored: list[Any]) -> None:
    """Give each node of `given` without an id the id of the matching node of `stored`."""
    for new, old in zip(given, stored, strict=False):
        if not (isinstance(new, dict) and isinstance(old, dict)):
            continue
        same = new.get("name") == old.get("name") and _field(new, "nodeType") == old.get("nodeType")
        if not same:
            continue
        if "id" not in new and old.get("id"):
            new["id"] = old["id"]
        for key in _SEQUENCES:
            carry_ids(_list(_field(new, key)), _list(old.get(key)))
        choices = {c.get("name"): c for c in _list(old.get("choices")) if isinstance(c, dict)}
        for choice in _list(new.get("choices")):
            if isinstance(choice, dict) and choice.get("name") in choices:
                carry_ids(_list(choice.get("steps")), _list(choices[choice["name"]].get("steps")))


def _field(node: dict[str, Any], name: str) -> Any:
    """The node's field `name` (camelCase, as the API answers), or its snake_case twin."""
    return node[name] if name in node else node.get(_SNAKE.get(name, name))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
