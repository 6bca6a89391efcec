"""Save-time rules of a definition (`validation.py`): what is refused, and how it is named.

Pure functions over the definition model; no Temporal, no server. The same rules over
HTTP (a 400 that stores nothing) are in tests/api/test_validation.py.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.validation import MAX_DEPTH, MAX_NODES, DefinitionError, Problem, normalise
from tests.builders import condition, echo, loop, node, parallel, router, step, transform

# A valid node of each type, for the rules that break one field of it.
VALID = {
    "step": echo("n"),
    "parallel": parallel("n", echo("a"), echo("b")),
    "condition": condition("n", "true", echo("a")),
    "loop": loop("n", echo("a")),
    "router": router("n", "'x'", {"x": [echo("a")], "y": [echo("b")]}),
}
ALL_GATES = [
    "requiresConfirmation",
    "requiresUserInput",
    "requiresOutputReview",
    "requiresIterationReview",
]


def spec(*nodes: dict[str, Any]) -> WorkflowSpec:
    return WorkflowSpec.model_validate({"name": "w", "nodes": list(nodes)})


def problems(*nodes: dict[str, Any]) -> list[str]:
    """Every problem saving a definition of `nodes` finds, as `path: message`."""
    ids = (f"node-{n}" for n in count(1))
    try:
        normalise(spec(*nodes), lambda: next(ids))
    except DefinitionError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_a_valid_tree_of_every_node_type_has_no_problems() -> None:
    assert (
        problems(
            echo("a"),
            parallel("p", echo("p1"), echo("p2")),
            condition("c", "input.go", echo("t"), falseSteps=[echo("f")]),
            loop("l", echo("i")),
            router("r", "'x'", {"x": [echo("rx")], "y": [echo("ry")]}),
        )
        == []
    )


class TestNormalise:
    def test_nodes_without_an_id_get_one_in_document_order(self) -> None:
        ids = (f"gen-{n}" for n in count(1))
        saved = normalise(spec(step("a"), parallel("p", step("b"), step("c"))), lambda: next(ids))
        assert [n.id for n in saved.nodes] == ["gen-1", "gen-2"]
        assert [c.id for c in saved.nodes[1].children] == ["gen-3", "gen-4"]

    def test_an_id_the_definition_gives_is_kept(self) -> None:
        saved = normalise(spec(step("a", id="mine")), lambda: "generated")
        assert saved.nodes[0].id == "mine"

    def test_a_definition_that_breaks_rules_raises_with_every_problem(self) -> None:
        with pytest.raises(DefinitionError) as info:
            normalise(spec(node("a", "step", id="a"), parallel("p", echo("b"), id="p")), str)
        assert [p.path for p in info.value.problems] == ["nodes[0] ('a')", "nodes[1] ('p')"]
        assert str(info.value) == "; ".join(str(p) for p in info.value.problems)

    def test_a_problem_reads_as_path_then_message(self) -> None:
        assert str(Problem("nodes[0] ('a')", "something")) == "nodes[0] ('a'): something"


class TestTree:
    def test_at_least_one_root_node_is_required(self) -> None:
        assert problems() == ["nodes: at least one root node is required"]

    def test_a_problem_names_the_path_and_name_of_its_node(self) -> None:
        tree = condition("c", "true", parallel("inner", echo("only")))
        assert problems(tree) == [
            "nodes[0].trueSteps[0] ('inner'): parallel nodes need at least 2 children"
        ]

    def test_a_router_choice_appears_in_the_path_by_name(self) -> None:
        tree = router("r", "'x'", {"x": [echo("a")], "y": [node("bad", "step")]})
        assert problems(tree) == [
            "nodes[0].choices[y][0] ('bad'): step nodes need exactly one of executorKey or a2aPool"
        ]

    def test_node_ids_are_unique_across_the_whole_tree(self) -> None:
        assert problems(echo("a"), parallel("p", echo("a"), echo("b"))) == [
            "nodes[1].children[0] ('a'): node id 'a' is also used by nodes[0] ('a')"
        ]

    def test_a_malformed_node_id_is_refused(self) -> None:
        assert problems(step("a", id="bad id!")) == [
            "nodes[0] ('a'): node id 'bad id!' is malformed"
        ]

    def test_the_tree_may_be_as_deep_as_the_limit_and_no_deeper(self) -> None:
        def nested(depth: int) -> dict[str, Any]:
            inner = echo("leaf")
            for level in range(depth - 1, 0, -1):
                inner = loop(f"level-{level}", inner)
            return inner

        assert problems(nested(MAX_DEPTH)) == []
        assert problems(nested(MAX_DEPTH + 1)) == [
            "nodes[0]" + ".children[0]" * MAX_DEPTH + f" ('leaf'): tree is deeper than {MAX_DEPTH}"
            " levels"
        ]

    def test_the_number_of_nodes_is_limited(self) -> None:
        many = [echo(f"s{i}") for i in range(MAX_NODES + 1)]
        assert problems(*many) == [f"nodes: {MAX_NODES + 1} nodes exceed the limit of {MAX_NODES}"]


class TestStep:
    def test_needs_an_executor_key_or_a_pool(self) -> None:
        assert problems(node("a", "step")) == [
            "nodes[0] ('a'): step nodes need exactly one of executorKey or a2aPool"
        ]

    def test_may_not_have_both_an_executor_key_and_a_pool(self) -> None:
        assert problems(step("a", a2aPool=["agent"])) == [
            "nodes[0] ('a'): step nodes need exactly one of executorKey or a2aPool"
        ]

    def test_a_blank_executor_key_is_refused(self) -> None:
        assert problems(step("a", "  ")) == ["nodes[0] ('a'): executorKey must not be empty"]

    def test_a_pool_holds_at_most_five_agents(self) -> None:
        six = [f"agent-{i}" for i in range(6)]
        assert problems(node("a", "step", a2aPool=six)) == [
            "nodes[0] ('a'): a2aPool has 6 agents; at most 5 are allowed"
        ]

    def test_a_pool_names_each_agent_once(self) -> None:
        assert problems(node("a", "step", a2aPool=["x", "x"])) == [
            "nodes[0] ('a'): a2aPool lists an agent twice"
        ]

    def test_the_backoff_cap_may_not_be_below_its_base(self) -> None:
        config = {"backoffBaseSeconds": 10, "backoffMaxSeconds": 5}
        assert problems(step("a", stepConfig=config)) == [
            "nodes[0] ('a'): stepConfig.backoffMaxSeconds must be >= backoffBaseSeconds"
        ]


# (node type, a field that belongs to other node types, a value for it)
FORBIDDEN = [
    ("step", "children", [echo("x")]),
    ("step", "conditionCel", "true"),
    ("step", "loopConfig", {"maxIterations": 1}),
    ("parallel", "executorKey", "builtin:echo"),
    ("parallel", "stepConfig", {}),
    ("parallel", "conditionCel", "true"),
    ("condition", "children", [echo("x")]),
    ("condition", "a2aPool", ["agent"]),
    ("loop", "trueSteps", [echo("x")]),
    ("loop", "conditionCel", "true"),
    ("router", "children", [echo("x")]),
    ("router", "loopConfig", {"maxIterations": 1}),
]


@pytest.mark.parametrize(
    ("node_type", "field", "value"), FORBIDDEN, ids=[f"{t}-{f}" for t, f, _ in FORBIDDEN]
)
def test_a_node_refuses_the_fields_of_other_node_types(
    node_type: str, field: str, value: Any
) -> None:
    assert problems(VALID[node_type] | {field: value}) == [
        f"nodes[0] ('n'): {node_type} nodes must not define {field}"
    ]


class TestContainers:
    def test_a_parallel_needs_two_children(self) -> None:
        assert problems(parallel("p", echo("a"))) == [
            "nodes[0] ('p'): parallel nodes need at least 2 children"
        ]

    def test_a_condition_needs_true_steps_and_an_expression(self) -> None:
        assert problems(node("c", "condition")) == [
            "nodes[0] ('c'): condition nodes need at least one step in trueSteps",
            "nodes[0] ('c'): condition nodes need conditionCel",
        ]

    def test_a_condition_may_leave_false_steps_empty(self) -> None:
        assert problems(condition("c", "true", echo("t"))) == []

    def test_a_loop_needs_its_config_and_a_child(self) -> None:
        assert problems(node("l", "loop")) == [
            "nodes[0] ('l'): loop nodes need loopConfig",
            "nodes[0] ('l'): loop nodes need at least 1 child",
        ]

    def test_a_router_needs_two_choices_and_an_expression(self) -> None:
        assert problems(node("r", "router", choices=[{"name": "x", "steps": [echo("a")]}])) == [
            "nodes[0] ('r'): router nodes need at least 2 choices",
            "nodes[0] ('r'): router nodes need conditionCel",
        ]

    def test_router_choice_names_are_unique_and_not_blank(self) -> None:
        choices = [{"name": n, "steps": [echo(f"s{i}")]} for i, n in enumerate(["x", "x", " "])]
        assert problems(VALID["router"] | {"choices": choices}) == [
            "nodes[0] ('n'): router choice names must not be empty",
            "nodes[0] ('n'): router choice names must be unique; repeated: x",
        ]

    def test_names_hold_no_control_characters(self) -> None:
        # A NUL, a bell or a terminal escape in a name reached every client showing it.
        choices = [{"name": n, "steps": [echo(f"s{i}")]} for i, n in enumerate(["x", "y\x07"])]
        assert problems(
            echo("a") | {"name": "a\x00b"},
            VALID["router"] | {"id": "r", "name": "r", "choices": choices},
        ) == [
            "nodes[0] ('a\\x00b'): node names must not hold control characters (U+0000)",
            "nodes[1] ('r'): router choice names must not hold control characters (U+0007)",
        ]
        named = WorkflowSpec.model_validate({"name": "evil\x1b[31m", "nodes": [echo("a")]})
        with pytest.raises(DefinitionError) as refused:
            normalise(named, lambda: "id-1")
        assert [str(p) for p in refused.value.problems] == [
            "name: must not hold control characters (U+001B)"
        ]
        # Tabs and newlines are controls too; accents, emoji and joiners are not.
        assert problems(echo("a") | {"name": "café 👩‍💻"}) == []

    def test_parallel_children_names_are_unique(self) -> None:
        children = [step("x", "builtin:echo"), step("y", "builtin:echo"), step("x", "builtin:echo")]
        assert problems(node("p", "parallel", children=children)) == [
            "nodes[0] ('p'): parallel children's names must be unique; repeated: x"
        ]

    def test_every_router_choice_needs_a_step(self) -> None:
        assert problems(router("r", "'x'", {"x": [echo("a")], "y": []})) == [
            "nodes[0] ('r'): router choice 'y' needs at least one step"
        ]


# Which gates each node type takes (the contract's compatibility table).
GATES_ALLOWED = {
    "step": ["requiresConfirmation", "requiresUserInput", "requiresOutputReview"],
    "condition": ["requiresConfirmation"],
    "loop": ["requiresConfirmation", "requiresIterationReview"],
    "router": ["requiresConfirmation", "requiresUserInput", "requiresOutputReview"],
}


@pytest.mark.parametrize("node_type", GATES_ALLOWED)
def test_each_node_type_takes_the_gates_of_the_compatibility_table(node_type: str) -> None:
    for gate in ALL_GATES:
        found = problems(VALID[node_type] | {"humanReview": {gate: True}})
        if gate in GATES_ALLOWED[node_type]:
            assert found == [], gate
        else:
            assert found == [
                f"nodes[0] ('n'): humanReview.{gate} is not supported on {node_type} nodes"
            ]


class TestHumanReview:
    def test_a_parallel_takes_no_review_at_all(self) -> None:
        assert problems(VALID["parallel"] | {"humanReview": {}}) == [
            "nodes[0] ('n'): parallel nodes must not define humanReview (branches run concurrently)"
        ]

    def test_rejecting_to_the_else_branch_is_for_conditions_only(self) -> None:
        review = {"requiresConfirmation": True, "onReject": "else_branch"}
        assert problems(VALID["condition"] | {"humanReview": review}) == []
        assert problems(echo("s", review)) == [
            "nodes[0] ('s'): humanReview.onReject 'else_branch' is only valid on condition nodes"
        ]

    def test_a_form_needs_requires_user_input(self) -> None:
        review = {"userInputSchema": [{"name": "amount"}]}
        assert problems(echo("s", review)) == [
            "nodes[0] ('s'): humanReview.userInputSchema needs requiresUserInput"
        ]

    def test_form_field_names_are_unique(self) -> None:
        review = {"requiresUserInput": True, "userInputSchema": [{"name": "f"}, {"name": "f"}]}
        assert problems(echo("s", review)) == [
            "nodes[0] ('s'): humanReview.userInputSchema field names must be unique"
        ]

    def test_a_form_default_its_own_field_refuses_is_refused(self) -> None:
        # It could never be confirmed, and a timer's onTimeout: approve skipped the node.
        form = [
            {"name": "n", "fieldType": "number", "defaultValue": "ten"},
            {"name": "t", "allowedValues": ["gold"], "defaultValue": "tin"},
            {"name": "b", "fieldType": "boolean", "allowedValues": [1, 2]},
            {"name": "ok", "fieldType": "number", "allowedValues": [1, 2], "defaultValue": 2},
            {"name": "no", "fieldType": "boolean", "defaultValue": False},
        ]
        review = {"requiresUserInput": True, "userInputSchema": form}
        assert problems(echo("s", review)) == [
            "nodes[0] ('s'): humanReview.userInputSchema[0] ('n'): defaultValue must be a number",
            "nodes[0] ('s'): humanReview.userInputSchema[1] ('t'): defaultValue must be one of"
            " ['gold']",
            "nodes[0] ('s'): humanReview.userInputSchema[2] ('b'): allowedValues entry 1 is not"
            " a boolean",
        ]

    def test_a_gate_inside_a_map_whose_items_run_at_once_is_refused(self) -> None:
        # The items would wait at one gate (one stepId) together: a decision could not
        # say which item it is for, and the run's workflow task failed on it.
        gated = echo("g", {"requiresConfirmation": True})
        deep = loop("l", gated)
        assert problems(node("m", "map", itemsCel="[1, 2]", children=[deep])) == [
            "nodes[0].children[0].children[0] ('g'): humanReview inside map 'm' needs that "
            "map's maxConcurrency to be 1 (its items would wait at the same gate at once)"
        ]

    def test_a_gate_inside_a_map_of_one_item_at_a_time_is_accepted(self) -> None:
        gated = echo("g", {"requiresConfirmation": True})
        one = node("m", "map", itemsCel="[1, 2]", maxConcurrency=1, children=[gated])
        assert problems(one) == []
        outer = node("o", "map", itemsCel="[1, 2]", children=[one | {"id": "m"}])
        assert problems(outer) == [
            "nodes[0].children[0].children[0] ('g'): humanReview inside map 'o' needs that "
            "map's maxConcurrency to be 1 (its items would wait at the same gate at once)"
        ]


class TestExpressions:
    def test_a_condition_expression_with_a_syntax_error_is_refused(self) -> None:
        [problem] = problems(condition("c", "input.x ===", echo("t")))
        assert problem.startswith("nodes[0] ('c'): conditionCel: CEL syntax error at line 1")

    def test_a_loop_end_condition_is_checked(self) -> None:
        config = {"maxIterations": 2, "endConditionCel": "iteration >"}
        [problem] = problems(loop("l", echo("a"), loopConfig=config))
        assert problem.startswith("nodes[0] ('l'): loopConfig.endConditionCel: CEL syntax error")

    def test_a_blank_expression_is_refused(self) -> None:
        assert problems(condition("c", "  ", echo("t"))) == [
            "nodes[0] ('c'): conditionCel: CEL expression is empty"
        ]

    def test_templates_are_checked_wherever_they_sit_in_the_config(self) -> None:
        [problem] = problems(echo("s", to=[{"name": "{{ 1 + }}"}]))
        assert problem.startswith("nodes[0] ('s'): config.to[0].name: CEL syntax error")

    def test_each_template_of_a_string_is_checked_on_its_own(self) -> None:
        assert problems(echo("s", text="{{ input.first }} {{ input.last }}")) == []
        [problem] = problems(echo("s", text="{{ input.first }} {{ input. }}"))
        assert problem.startswith("nodes[0] ('s'): config.text: CEL syntax error")
        assert "'input.'" in problem

    def test_a_template_that_is_never_closed_is_refused(self) -> None:
        assert problems(echo("s", text="Hi {{ input.first")) == [
            "nodes[0] ('s'): config.text: template at character 3 of 'Hi {{ input.first'"
            " has no closing }}"
        ]

    def test_text_without_templates_is_not_cel(self) -> None:
        assert problems(echo("s", text="not ( cel")) == []

    def test_transform_map_values_are_cel_themselves(self) -> None:
        assert problems(transform("t", ok="input.a + 1")) == []
        [problem] = problems(transform("t", bad="input.a +"))
        assert problem.startswith("nodes[0] ('t'): config.map.bad: CEL syntax error")

    def test_a_transform_without_a_map_of_cel_strings_is_refused(self) -> None:
        # Saved, it could only fail its run: "builtin:transform needs config.map".
        missing = step("t", "builtin:transform", {})
        assert problems(missing) == [
            "nodes[0] ('t'): builtin:transform needs config.map: an object of CEL expressions"
        ]
        assert problems(step("t", "builtin:transform", {"map": {"v": 5}})) == [
            "nodes[0] ('t'): config.map.v: a CEL expression (a string) is needed, got int"
        ]

    def test_a_transform_map_made_by_a_template_is_left_to_the_run(self) -> None:
        assert problems(step("t", "builtin:transform", {"map": "{{ input.mapping }}"})) == []

    def test_another_executors_map_is_only_checked_for_templates(self) -> None:
        assert problems(echo("s", map={"bad": "input.a +"})) == []
