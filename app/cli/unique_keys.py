"""YAML and JSON read so that a key given twice in one mapping is refused, not silently
the last one's: a file with two `name:` lines or two `config:` blocks lost one without a
word. The same key in different mappings is no repeat."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

_MERGE = "tag:yaml.org,2002:merge"


class RepeatedKey(ValueError):
    """A JSON object that names a key twice."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader whose mappings refuse a repeated key, naming it and its lines."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                # `<<: *base` merges keys that the mapping's own may override: YAML's rule.
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                seen = first_line.get(key)
            except TypeError:
                continue  # unhashable: SafeLoader refuses it itself
            if seen is not None:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"the key {key!r} is given twice in one mapping (first at line {seen})",
                    key_node.start_mark,
                )
            first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, but a mapping naming a key twice is a ConstructorError whose
    `problem_mark` is the second one."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: safe_load's tags only


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook` for `json.loads`: a key given twice in one object is RepeatedKey."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise RepeatedKey(f"the key {key!r} is given twice in one object")
        found[key] = value
    return found
