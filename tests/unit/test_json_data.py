"""What data a run can carry: the checks on request data and on step outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activities.executors.base import PermanentError
from activities.steps import _check_size
from temporal_workflows.json_data import (
    MAX_DATA_VALUES,
    MAX_OUTPUT_DEPTH,
    bounded_json_size,
    data_problem,
    deeper_than,
    more_values_than,
)


def nested(levels: int) -> Any:
    value: Any = 1
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def test_deeper_than_counts_lists_and_objects() -> None:
    assert not deeper_than(1, 0)
    assert not deeper_than({"a": [1]}, 2)
    assert deeper_than({"a": [1]}, 1)
    assert not deeper_than(nested(150), 150)
    assert deeper_than(nested(151), 150)


def test_deeper_than_walks_subclasses_of_lists_and_objects_too() -> None:
    # Checked by type first (the sandbox's isinstance is slow); subclasses still count.
    class Obj(dict[str, Any]):
        pass

    class Seq(list[Any]):
        pass

    assert deeper_than(Obj(a=Seq([Obj(b=1)])), 2)
    assert not deeper_than(Obj(a=Seq([Obj(b=1)])), 3)
    assert deeper_than({"a": [{"b": {}}]}, 3)


def test_bounded_json_size_is_exact_within_the_limit_and_stops_past_it() -> None:
    value = {"a": [1, 2], "b": "x" * 10}
    assert bounded_json_size(value, 1000) == len(json.dumps(value))
    assert bounded_json_size([1, 2, 3], 100) == len(json.dumps([1, 2, 3]))
    assert bounded_json_size("abc", 100) == 5
    # Past the limit it stops counting: a thousand parts of 1 KB are not all serialized.
    parts = ["y" * 1000] * 1000
    size = bounded_json_size(parts, 5000)
    assert 5000 < size < 7000


def test_more_values_than_counts_every_value_and_stops_past_the_limit() -> None:
    # The object, its list, two numbers, the inner object and its string: 6.
    value = {"a": [1, 2], "b": {"c": "x"}}
    assert not more_values_than(value, 6)
    assert more_values_than(value, 5)
    assert not more_values_than("x", 1) and more_values_than([], 0)
    # A container's children are counted at once: a huge one is not walked.
    assert more_values_than({f"k{i}": [] for i in range(1000)}, 10)


def test_data_problem_names_the_place() -> None:
    assert data_problem({"a": [1, "x", 2.5]}, "initialInput") is None
    assert data_problem({"a": [1, float("inf")]}, "initialInput") == (
        "initialInput.a[1] is not a finite number"
    )
    assert data_problem({"s": "a\ud800"}, "config") == (
        "config.s is not valid Unicode (it holds a lone surrogate)"
    )
    problem = data_problem({"d": nested(101)}, "initialInput")
    assert problem is not None and problem.endswith("nests deeper than 100 levels")
    assert data_problem({"xs": [0] * (MAX_DATA_VALUES - 2)}, "initialInput") is None
    assert data_problem({"xs": [0] * (MAX_DATA_VALUES - 1)}, "initialInput") == (
        "initialInput holds more than 100000 JSON values"
    )


def test_a_remote_step_output_too_deep_for_a_payload_is_a_permanent_error() -> None:
    # The workflow could not decode a result nested ~200 deep: the run hung.
    _check_size(nested(MAX_OUTPUT_DEPTH), 1 << 20)
    with pytest.raises(PermanentError, match="nests deeper than 150 levels"):
        _check_size(nested(MAX_OUTPUT_DEPTH + 1), 1 << 20)


def test_a_remote_step_output_of_too_many_values_is_a_permanent_error() -> None:
    # The workflow decoding a million of them ran past Temporal's 2 s in every task.
    _check_size([0] * (MAX_DATA_VALUES - 1), 1 << 24)
    with pytest.raises(PermanentError, match="holds more than 100000 JSON values"):
        _check_size([0] * MAX_DATA_VALUES, 1 << 24)
