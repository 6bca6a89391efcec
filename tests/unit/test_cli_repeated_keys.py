"""A key given twice in one mapping of a file or JSON value the CLI reads is refused, naming
the key (and its line, in YAML); json and PyYAML silently kept the last one. The same key
in different mappings, and YAML's merge keys (`<<`), are no repeat."""

from __future__ import annotations

import json

import pytest
from yaml.constructor import ConstructorError

from app.cli.unique_keys import RepeatedKey, load_yaml, unique_pairs


@pytest.mark.parametrize(
    ("text", "key", "line", "first"),
    [
        ("name: a\nnodes: []\nname: b\n", "name", 3, 1),
        ("nodes:\n  - config: {a: 1}\n    name: x\n    config: {b: 2}\n", "config", 4, 2),
        ('{"name": "a",\n "nodes": [],\n "name": "b"}', "name", 3, 1),
    ],
)
def test_a_key_given_twice_in_one_mapping_is_refused_at_its_line(
    text: str, key: str, line: int, first: int
) -> None:
    with pytest.raises(ConstructorError) as refused:
        load_yaml(text)
    assert refused.value.problem == (
        f"the key {key!r} is given twice in one mapping (first at line {first})"
    )
    assert refused.value.problem_mark is not None
    assert refused.value.problem_mark.line + 1 == line


def test_the_same_key_in_different_mappings_and_merged_keys_are_kept() -> None:
    text = "a: {x: 1}\nb: {x: 2}\nbase: &base {x: 1, y: 2}\nc:\n  <<: *base\n  x: 3\n"
    assert load_yaml(text) == {
        "a": {"x": 1}, "b": {"x": 2}, "base": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2},
    }  # fmt: skip


def test_a_json_object_naming_a_key_twice_is_refused_naming_it() -> None:
    assert json.loads('{"a": {"x": 1}, "b": {"x": 2}}', object_pairs_hook=unique_pairs) == {
        "a": {"x": 1}, "b": {"x": 2},
    }  # fmt: skip
    with pytest.raises(RepeatedKey, match="the key 'x' is given twice in one object"):
        json.loads('{"a": {"x": 1, "x": 2}}', object_pairs_hook=unique_pairs)
