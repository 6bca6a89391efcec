"""Every save-time rule: a 400 `invalid_request` naming the node and the rule, nothing stored."""

# The rule tables read best one rule per line.
# ruff: noqa: E501

from __future__ import annotations

from typing import Any
from uuid import uuid4

import httpx
import pytest

from tests.api.helpers import API, assert_error
from tests.builders import condition, loop, node, parallel, router, step, workflow

TWO = [step("B"), step("C")]
CHOICES = [{"name": "x", "steps": [step("B")]}, {"name": "y", "steps": [step("C")]}]
LOOP = {"maxIterations": 3}

# A valid node of each container type; each rule below overrides the fields it breaks.
VALID = {
    "parallel": parallel("P", *TWO),
    "condition": condition("Q", "true", step("T")),
    "loop": loop("L", step("B"), max_iterations=3),
    "router": router("R", "'x'", {"x": [step("B")], "y": [step("C")]}),
    "map": node("M", "map", itemsCel="input.items", children=[step("B")]),
}


def valid(node_type: str, **fields: Any) -> dict[str, Any]:
    return VALID[node_type] | fields


def nested(depth: int) -> dict[str, Any]:
    """`depth` levels of loops around one step (the step sits at level depth + 1)."""
    inner: dict[str, Any] = step("deepest")
    for level in range(depth, 0, -1):
        inner = loop(f"level-{level}", inner, max_iterations=3)
    return inner


def review(**fields: Any) -> dict[str, Any]:
    return {"humanReview": fields}


# fmt: off
# (rule, the one node sent, fragments the message must contain)
SHAPE_RULES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("step_needs_an_executor", node("A", "step"), ["nodes[0] ('A')", "exactly one of executorKey or a2aPool"]),
    ("step_rejects_executor_and_pool", step("A", a2aPool=["web-agent"]), ["('A')", "exactly one of executorKey or a2aPool"]),
    ("step_rejects_children", step("A", children=TWO), ["('A')", "step nodes must not define children"]),
    ("step_rejects_true_steps", step("A", trueSteps=TWO), ["('A')", "must not define trueSteps"]),
    ("step_rejects_false_steps", step("A", falseSteps=TWO), ["('A')", "must not define falseSteps"]),
    ("step_rejects_choices", step("A", choices=CHOICES), ["('A')", "must not define choices"]),
    ("step_rejects_loop_config", step("A", loopConfig=LOOP), ["('A')", "must not define loopConfig"]),
    ("step_rejects_condition_cel", step("A", conditionCel="true"), ["('A')", "must not define conditionCel"]),
    ("step_rejects_blank_executor_key", step("A", key="  "), ["('A')", "executorKey must not be empty"]),
    ("a2a_pool_holds_at_most_five", node("A", "step", a2aPool=["a1", "a2", "a3", "a4", "a5", "a6"]), ["('A')", "at most 5"]),
    ("a2a_pool_lists_each_agent_once", node("A", "step", a2aPool=["web-agent", "web-agent"]), ["('A')", "agent twice"]),
    ("pool_strategy_known", node("A", "step", a2aPool=["web-agent"], config={"poolStrategy": "random"}), ["nodes[0] ('A')", "config.poolStrategy 'random' is unknown", "failover, round_robin, skill_match"]),
    ("pool_strategy_known_when_nested", valid("parallel", children=[step("B"), node("C", "step", a2aPool=["web-agent"], config={"poolStrategy": 3})]), ["nodes[0].children[1] ('C')", "config.poolStrategy '3' is unknown"]),
    ("backoff_max_not_below_base", step("A", stepConfig={"backoffBaseSeconds": 10, "backoffMaxSeconds": 5}), ["('A')", "backoffMaxSeconds must be >= backoffBaseSeconds"]),
    # A timeout under a microsecond is none to Temporal: every run stayed pending (an audit).
    ("timeout_at_least_a_millisecond", step("A", stepConfig={"timeoutSeconds": 1e-300}), ["('A')", "stepConfig.timeoutSeconds must be at least 0.001 (a millisecond)"]),
    ("backoff_at_least_a_millisecond", step("A", stepConfig={"backoffBaseSeconds": 0.0001, "backoffMaxSeconds": 0.0009}), ["('A')", "stepConfig.backoffBaseSeconds must be at least 0.001", "stepConfig.backoffMaxSeconds must be at least 0.001"]),
    ("parallel_needs_two_children", valid("parallel", children=[step("B")]), ["('P')", "at least 2 children"]),
    ("parallel_rejects_executor_key", valid("parallel", executorKey="tool-a"), ["('P')", "parallel nodes must not define executorKey"]),
    ("parallel_rejects_a2a_pool", valid("parallel", a2aPool=["web-agent"]), ["('P')", "must not define a2aPool"]),
    ("parallel_rejects_true_steps", valid("parallel", trueSteps=TWO), ["('P')", "must not define trueSteps"]),
    ("parallel_rejects_false_steps", valid("parallel", falseSteps=TWO), ["('P')", "must not define falseSteps"]),
    ("parallel_rejects_choices", valid("parallel", choices=CHOICES), ["('P')", "must not define choices"]),
    ("parallel_rejects_step_config", valid("parallel", stepConfig={}), ["('P')", "must not define stepConfig"]),
    ("condition_needs_true_steps", valid("condition", trueSteps=[]), ["('Q')", "at least one step in trueSteps"]),
    ("condition_needs_condition_cel", valid("condition", conditionCel=None), ["('Q')", "condition nodes need conditionCel"]),
    ("condition_rejects_children", valid("condition", children=TWO), ["('Q')", "condition nodes must not define children"]),
    ("condition_rejects_choices", valid("condition", choices=CHOICES), ["('Q')", "must not define choices"]),
    ("condition_rejects_step_config", valid("condition", stepConfig={}), ["('Q')", "must not define stepConfig"]),
    ("condition_rejects_executor_key", valid("condition", executorKey="tool-a"), ["('Q')", "must not define executorKey"]),
    ("loop_needs_loop_config", valid("loop", loopConfig=None), ["('L')", "loop nodes need loopConfig"]),
    ("loop_needs_a_child", valid("loop", children=[]), ["('L')", "at least 1 child"]),
    ("loop_rejects_true_steps", valid("loop", trueSteps=TWO), ["('L')", "loop nodes must not define trueSteps"]),
    ("loop_rejects_false_steps", valid("loop", falseSteps=TWO), ["('L')", "must not define falseSteps"]),
    ("loop_rejects_choices", valid("loop", choices=CHOICES), ["('L')", "must not define choices"]),
    ("loop_rejects_step_config", valid("loop", stepConfig={}), ["('L')", "must not define stepConfig"]),
    ("router_needs_two_choices", valid("router", choices=CHOICES[:1]), ["('R')", "at least 2 choices"]),
    ("router_choice_names_unique", valid("router", choices=[CHOICES[0], CHOICES[0]]), ["('R')", "must be unique; repeated: x"]),
    ("node_name_not_blank", step("   "), ["nodes[0] ('   '): node names must not be blank"]),
    # The block's output is keyed by child name: a repeated one lost a child's output.
    ("parallel_child_names_unique", valid("parallel", children=[step("B"), step("B", config={"v": 2})]), ["parallel children's names must be unique; repeated: B"]),
    ("router_choice_names_not_empty", valid("router", choices=[CHOICES[0], {"name": " ", "steps": [step("C")]}]), ["('R')", "choice names must not be empty"]),
    ("router_choice_needs_steps", valid("router", choices=[CHOICES[0], {"name": "y", "steps": []}]), ["('R')", "router choice 'y' needs at least one step"]),
    ("router_needs_condition_cel", valid("router", conditionCel=None), ["('R')", "router nodes need conditionCel"]),
    ("router_rejects_children", valid("router", children=TWO), ["('R')", "router nodes must not define children"]),
    ("router_rejects_true_steps", valid("router", trueSteps=TWO), ["('R')", "must not define trueSteps"]),
    ("router_rejects_false_steps", valid("router", falseSteps=TWO), ["('R')", "must not define falseSteps"]),
    ("router_rejects_step_config", valid("router", stepConfig={}), ["('R')", "must not define stepConfig"]),
    ("map_needs_items_cel", valid("map", itemsCel=None), ["('M')", "map nodes need itemsCel"]),
    ("map_needs_a_child", valid("map", children=[]), ["('M')", "map nodes need at least 1 child"]),
    ("map_rejects_executor_key", valid("map", executorKey="tool-a"), ["('M')", "map nodes must not define executorKey"]),
    ("map_rejects_condition_cel", valid("map", conditionCel="true"), ["('M')", "map nodes must not define conditionCel"]),
    ("map_rejects_loop_config", valid("map", loopConfig=LOOP), ["('M')", "map nodes must not define loopConfig"]),
    ("items_cel_only_on_map", step("A", itemsCel="[1]"), ["('A')", "step nodes must not define itemsCel"]),
    ("max_concurrency_only_on_parallel_and_map", valid("loop", maxConcurrency=2), ["('L')", "loop nodes must not define maxConcurrency"]),
    ("nested_problem_names_its_path", valid("condition", trueSteps=[parallel("Inner", step("B"))]), ["nodes[0].trueSteps[0] ('Inner')", "at least 2 children"]),
    ("node_ids_unique_across_the_tree", valid("parallel", children=[step("B", id="same"), step("C", id="same")]), ["children[1] ('C')", "node id 'same' is also used by"]),
    ("node_ids_well_formed", step("A", id="bad id!"), ["('A')", "node id 'bad id!' is malformed"]),
    ("node_ids_end_without_a_line_end", step("A", id="a\n"), ["('A')", "node id 'a\\n' is malformed"]),
    ("tree_depth_limited", nested(12), ["('deepest')", "deeper than 12 levels"]),
]

HUMAN_REVIEW_RULES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("parallel_rejects_any_review", valid("parallel", **review(requiresConfirmation=True)), ["('P')", "parallel nodes must not define humanReview"]),
    ("parallel_rejects_even_an_empty_review", valid("parallel", **review()), ["('P')", "must not define humanReview"]),
    ("map_rejects_any_review", valid("map", **review(requiresConfirmation=True)), ["('M')", "map nodes must not define humanReview"]),
    ("form_default_fits_its_field", step("A", **review(requiresUserInput=True, userInputSchema=[{"name": "n", "fieldType": "number", "defaultValue": "ten"}])), ["('A')", "userInputSchema[0] ('n'): defaultValue must be a number"]),
    ("no_gate_under_a_concurrent_map", valid("map", children=[step("B", **review(requiresConfirmation=True))]), ["children[0] ('B')", "humanReview inside map 'M' needs that map's maxConcurrency to be 1"]),
    ("condition_rejects_user_input", valid("condition", **review(requiresUserInput=True)), ["('Q')", "requiresUserInput is not supported on condition"]),
    ("condition_rejects_output_review", valid("condition", **review(requiresOutputReview=True)), ["('Q')", "requiresOutputReview is not supported on condition"]),
    ("condition_rejects_iteration_review", valid("condition", **review(requiresIterationReview=True)), ["('Q')", "requiresIterationReview is not supported on condition"]),
    ("loop_rejects_user_input", valid("loop", **review(requiresUserInput=True)), ["('L')", "requiresUserInput is not supported on loop"]),
    ("loop_rejects_output_review", valid("loop", **review(requiresOutputReview=True)), ["('L')", "requiresOutputReview is not supported on loop"]),
    ("step_rejects_iteration_review", step("A", **review(requiresIterationReview=True)), ["('A')", "requiresIterationReview is not supported on step"]),
    ("router_rejects_iteration_review", valid("router", **review(requiresIterationReview=True)), ["('R')", "requiresIterationReview is not supported on router"]),
    ("else_branch_not_on_step", step("A", **review(requiresConfirmation=True, onReject="else_branch")), ["('A')", "'else_branch' is only valid on condition"]),
    ("else_branch_not_on_loop", valid("loop", **review(requiresConfirmation=True, onReject="else_branch")), ["('L')", "'else_branch' is only valid on condition"]),
    ("else_branch_not_on_router", valid("router", **review(requiresConfirmation=True, onReject="else_branch")), ["('R')", "'else_branch' is only valid on condition"]),
    ("user_input_schema_needs_requires_user_input", step("A", **review(userInputSchema=[{"name": "f"}])), ["('A')", "userInputSchema needs requiresUserInput"]),
    ("user_input_field_names_unique", step("A", **review(requiresUserInput=True, userInputSchema=[{"name": "f"}, {"name": "f"}])), ["('A')", "field names must be unique"]),
]

# Ten nested `exists` over ten-element lists: 10^10 evaluations, unbounded, hung its run.
NESTED_EXISTS = "input.l" + "".join(f".exists(v{i}, input.l" for i in range(10)) + ".size() > 0" + ")" * 10
LITERAL_BOMB = "[" + ",".join("1" * 40) + "]"
LITERAL_BOMB = f"{LITERAL_BOMB}.exists(a, {LITERAL_BOMB}.exists(b, {LITERAL_BOMB}.exists(c, false)))"

# Longer than a CEL expression may be (and valid: refused for its length alone).
PADDED = "size('" + "p" * 4_100 + "')"
CEL_RULES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("condition_cel_syntax", valid("condition", conditionCel="input.x ==="), ["('Q')", "conditionCel: CEL syntax error at line 1, column"]),
    ("router_cel_syntax", valid("router", conditionCel="input.(strategy"), ["('R')", "conditionCel: CEL syntax error"]),
    ("loop_end_condition_syntax", valid("loop", loopConfig={"maxIterations": 2, "endConditionCel": "iteration >"}), ["('L')", "loopConfig.endConditionCel: CEL syntax error"]),
    ("blank_condition_cel", valid("condition", conditionCel="   "), ["('Q')", "conditionCel: CEL expression is empty"]),
    ("items_cel_syntax", valid("map", itemsCel="input.items["), ["('M')", "itemsCel: CEL syntax error"]),
    ("config_template_syntax", step("A", config={"message": "Hello {{ input. }}"}), ["('A')", "config.message: CEL syntax error"]),
    ("nested_config_template_syntax", step("A", config={"to": [{"name": "{{ 1 + }}"}]}), ["('A')", "config.to[0].name: CEL syntax error"]),
    ("each_of_several_templates_checked", step("A", config={"name": "{{ input.first }} {{ input. }}"}), ["('A')", "config.name: CEL syntax error", "'input.'"]),
    ("config_template_unclosed", step("A", config={"greeting": "Hello {{ input.name"}), ["('A')", "config.greeting: template at character 6", "has no closing }}"]),
    ("condition_comprehensions_nest_at_most_3", valid("condition", conditionCel=NESTED_EXISTS), ["('Q')", "conditionCel: CEL expression", "is too costly", "nest 10 deep; at most 3 may"]),
    ("template_comprehensions_over_literals_fit_the_budget", step("A", config={"x": "{{ " + LITERAL_BOMB + " }}"}), ["('A')", "config.x: CEL expression", "takes at least", "the budget is 10000"]),
    ("condition_calls_known_functions", valid("condition", conditionCel="foo(input.x)"), ["('Q')", "conditionCel: CEL expression", "calls 'foo', which is no CEL function"]),
    ("template_calls_known_methods", step("A", config={"n": "{{ input.name.sise() }}"}), ["('A')", "config.n: CEL expression", "(did you mean 'size'?)"]),
    ("template_length", step("A", config={"x": "{{ " + PADDED + " }}"}), ["('A')", "config.x: CEL expression is 4108 characters long; at most 4000"]),
    ("transform_map_value_length", step("A", key="builtin:transform", config={"map": {"v": PADDED}}), ["('A')", "config.map.v: CEL expression is 4108 characters long; at most 4000"]),
    ("condition_compiling_fits_the_budget", valid("condition", conditionCel="input.xs.exists(x, x in [" + "1," * 1500 + "1])"), ["('Q')", "conditionCel: compiling it takes", "steps; at most 20000"]),
    ("end_condition_not_too_deep", valid("loop", loopConfig={"maxIterations": 2, "endConditionCel": "(" * 30 + "true" + ")" * 30}), ["('L')", "loopConfig.endConditionCel", "nests too deeply"]),
]

CATALOG_RULES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("executor_key_known", step("A", key="no-such-tool"), ["('A')", "unknown executorKey", "'no-such-tool'"]),
    ("builtin_key_known", step("A", key="builtin:nope"), ["('A')", "unknown executorKey", "not a built-in"]),
    ("a2a_key_names_a_catalog_agent", step("A", key="a2a:ghost-agent"), ["('A')", "unknown executorKey", "no A2A agent 'ghost-agent'"]),
    ("a2a_pool_agents_known", node("A", "step", a2aPool=["web-agent", "ghost-agent"]), ["('A')", "unresolvable a2aPool", "'ghost-agent'"]),
    ("nested_executor_key_known", valid("condition", trueSteps=[step("Deep", key="nope")]), ["('Deep')", "unknown executorKey"]),
]

# Field types and bounds, checked by the model: the message carries the field path.
FIELD_RULES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("node_type_known", node("A", "subflow"), ["nodes[0].nodeType"]),
    ("node_name_required", {"nodeType": "step", "executorKey": "tool-a"}, ["nodes[0].name: Field required"]),
    ("node_name_not_empty", step(""), ["nodes[0].name"]),
    ("node_name_length", step("n" * 201), ["nodes[0].name", "at most 200"]),
    ("node_id_length", step("A", id="i" * 129), ["nodes[0].id"]),
    ("max_retries_not_negative", step("A", stepConfig={"maxRetries": -1}), ["nodes[0].stepConfig.maxRetries", "greater than or equal to 0"]),
    ("on_error_known", step("A", stepConfig={"onError": "explode"}), ["nodes[0].stepConfig.onError"]),
    ("backoff_base_positive", step("A", stepConfig={"backoffBaseSeconds": 0}), ["nodes[0].stepConfig.backoffBaseSeconds", "greater than 0"]),
    ("backoff_max_positive", step("A", stepConfig={"backoffMaxSeconds": -1}), ["nodes[0].stepConfig.backoffMaxSeconds", "greater than 0"]),
    ("max_iterations_at_least_one", valid("loop", loopConfig={"maxIterations": 0}), ["nodes[0].loopConfig.maxIterations", "greater than or equal to 1"]),
    ("max_iterations_required", valid("loop", loopConfig={}), ["nodes[0].loopConfig.maxIterations: Field required"]),
    ("on_reject_known", step("A", **review(onReject="ignore")), ["nodes[0].humanReview.onReject"]),
    ("on_timeout_known", step("A", **review(onTimeout="forever")), ["nodes[0].humanReview.onTimeout"]),
    ("choice_name_required", valid("router", choices=[CHOICES[0], {"steps": [step("C")]}]), ["nodes[0].choices[1].name: Field required"]),
    ("position_is_numeric", step("A", position={"x": "left"}), ["nodes[0].position.x"]),
    ("config_is_an_object", step("A", config=["a"]), ["nodes[0].config"]),
    ("a2a_pool_is_a_list", node("A", "step", a2aPool="web-agent"), ["nodes[0].a2aPool"]),
    ("condition_cel_length", valid("condition", conditionCel="true && " * 600 + "true"), ["nodes[0].conditionCel", "at most 4000"]),
    ("node_max_concurrency_at_most_500", valid("map", maxConcurrency=501), ["nodes[0].maxConcurrency", "less than or equal to 500"]),
]
# fmt: on


def _cases(rules: list[tuple[str, dict[str, Any], list[str]]]) -> Any:
    return [pytest.param(n, fr, id=rule) for rule, n, fr in rules]


async def _stored_count(client: httpx.AsyncClient) -> int:
    return (await client.get(f"{API}/workflows")).json()["pagination"]["total"]  # type: ignore[no-any-return]


async def _assert_rejected_and_nothing_stored(
    client: httpx.AsyncClient, body: Any, fragments: list[str]
) -> dict[str, Any]:
    before = await _stored_count(client)
    response = await client.post(f"{API}/workflows", json=body)
    assert_error(response, 400, "invalid_request", *fragments)
    assert await _stored_count(client) == before
    return response.json()["error"]  # type: ignore[no-any-return]


@pytest.fixture
def client(shared_client: httpx.AsyncClient) -> httpx.AsyncClient:
    # Rejections leave nothing behind, so one served app serves the whole module.
    return shared_client


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid4().hex[:8]}"


class TestNodeShapeRules:
    @pytest.mark.parametrize(("bad", "fragments"), _cases(SHAPE_RULES))
    async def test_rejected(
        self, client: httpx.AsyncClient, bad: dict[str, Any], fragments: list[str]
    ) -> None:
        error = await _assert_rejected_and_nothing_stored(client, workflow("w", bad), fragments)
        assert error["details"] and all({"path", "message"} <= set(d) for d in error["details"])


class TestHumanReviewRules:
    @pytest.mark.parametrize(("bad", "fragments"), _cases(HUMAN_REVIEW_RULES))
    async def test_rejected(
        self, client: httpx.AsyncClient, bad: dict[str, Any], fragments: list[str]
    ) -> None:
        await _assert_rejected_and_nothing_stored(client, workflow("w", bad), fragments)

    @pytest.mark.parametrize(
        "good",
        [
            pytest.param(step("A", **review(requiresConfirmation=True, requiresUserInput=True,
                                             requiresOutputReview=True)), id="step"),
            pytest.param(valid("condition", **review(requiresConfirmation=True, onReject="else_branch")),
                         id="condition"),
            pytest.param(valid("loop", **review(requiresConfirmation=True, requiresIterationReview=True)),
                         id="loop"),
            pytest.param(valid("router", **review(requiresConfirmation=True, requiresUserInput=True,
                                         requiresOutputReview=True)), id="router"),
        ],
    )  # fmt: skip
    async def test_supported_fields_are_accepted(
        self, client: httpx.AsyncClient, good: dict[str, Any]
    ) -> None:
        response = await client.post(f"{API}/workflows", json=workflow(unique("hitl"), good))
        assert response.status_code == 201, response.text
        assert response.json()["nodes"][0]["humanReview"]["requiresConfirmation"] is True


class TestExpressionRules:
    @pytest.mark.parametrize(("bad", "fragments"), _cases(CEL_RULES))
    async def test_rejected(
        self, client: httpx.AsyncClient, bad: dict[str, Any], fragments: list[str]
    ) -> None:
        await _assert_rejected_and_nothing_stored(client, workflow("w", bad), fragments)

    async def test_a_syntax_error_quotes_its_expression_briefly(
        self, client: httpx.AsyncClient
    ) -> None:
        # The whole expression was quoted in the message and again in its details: a 2 MB
        # one ending in `+` answered 4 MB.
        broken = "input.x + " + "1 + " * 950 + "+"
        bad = valid("condition", conditionCel=broken)
        error = await _assert_rejected_and_nothing_stored(
            client, workflow("w", bad), ["conditionCel: CEL syntax error at line 1, column"]
        )
        assert len(error["message"]) < 600, error["message"]
        assert all(len(d["message"]) < 600 for d in error["details"]), error["details"]


class TestExecutorRules:
    @pytest.mark.parametrize(("bad", "fragments"), _cases(CATALOG_RULES))
    async def test_rejected(
        self, client: httpx.AsyncClient, bad: dict[str, Any], fragments: list[str]
    ) -> None:
        await _assert_rejected_and_nothing_stored(client, workflow("w", bad), fragments)

    async def test_catalog_problems_name_the_node_by_path_beside_the_other_rules(
        self, client: httpx.AsyncClient
    ) -> None:
        # docs/api.md: every problem at once, each named by the node's path and name.
        body = workflow(
            "w",
            valid("condition", trueSteps=[step("Deep", key="nope")]),
            node("Bare", "step"),
        )
        error = await _assert_rejected_and_nothing_stored(client, body, ["unknown executorKey"])
        assert {d["path"] for d in error["details"]} == {
            "nodes[0].trueSteps[0] ('Deep')",
            "nodes[1] ('Bare')",
        }
        assert "nodes[0].trueSteps[0] ('Deep'): unknown executorKey: 'nope'" in error["message"]

    async def test_a_tool_offered_by_two_servers_must_name_its_server(
        self, client: httpx.AsyncClient
    ) -> None:
        # `shared-tool` is listed by both servers of the test catalog.
        await _assert_rejected_and_nothing_stored(
            client, workflow("w", step("A", key="shared-tool")), ["('A')", "ambiguous"]
        )
        response = await client.post(
            f"{API}/workflows",
            json=workflow(unique("qualified"), step("A", key="tree-tools/shared-tool")),
        )
        assert response.status_code == 201, response.text

    async def test_an_agent_may_be_named_a2a_colon_its_name(
        self, client: httpx.AsyncClient
    ) -> None:
        response = await client.post(
            f"{API}/workflows", json=workflow(unique("agent"), step("A", key="a2a:web-agent"))
        )
        assert response.status_code == 201, response.text


class TestFieldRules:
    @pytest.mark.parametrize(("bad", "fragments"), _cases(FIELD_RULES))
    async def test_rejected(
        self, client: httpx.AsyncClient, bad: dict[str, Any], fragments: list[str]
    ) -> None:
        error = await _assert_rejected_and_nothing_stored(client, workflow("w", bad), fragments)
        assert error["details"][0]["path"].startswith("nodes[0]")


class TestWorkflowLevelRules:
    async def test_a_tree_past_the_validators_depth_names_its_path_compactly(
        self, client: httpx.AsyncClient
    ) -> None:
        # 300 levels: the 400 repeated `children[0]` some 255 times (a 6 kB message).
        error = await _assert_rejected_and_nothing_stored(
            client, workflow("w", nested(300)), ["at most 12 levels deep"]
        )
        (detail,) = error["details"]
        head = "nodes[0].children[0].children[0]"
        assert detail["path"].startswith(f"{head} … children[0] (")
        assert detail["path"].endswith(" levels deep)")
        assert detail["message"] == "nested too deeply (a node tree may be at most 12 levels deep)"
        assert error["message"] == f"Invalid request: {detail['path']}: {detail['message']}"
        assert len(error["message"]) < 200

    @pytest.mark.parametrize(
        ("body", "fragments"),
        [
            pytest.param({"name": "w"}, ["nodes: Field required"], id="nodes_required"),
            pytest.param({"name": "w", "nodes": []}, ["at least one root node"], id="nodes_not_empty"),
            pytest.param({"nodes": [step("A")]}, ["name: Field required"], id="name_required"),
            pytest.param(workflow(""), ["name: String should have at least 1 character"], id="name_not_empty"),
            pytest.param(workflow("n" * 201), ["name", "at most 200"], id="name_length"),
            pytest.param(workflow(" \t "), ["name: must not be blank"], id="name_not_blank"),
            pytest.param(workflow("w", description="d" * 5001), ["description", "at most 5000"], id="description_length"),
            pytest.param(workflow("w", canvas={"viewport": {"zoom": 0}}), ["canvas.viewport.zoom", "greater than 0"], id="zoom_positive"),
            pytest.param(workflow("w", canvas={"viewport": {"zoom": -1}}), ["canvas.viewport.zoom"], id="zoom_not_negative"),
            pytest.param(workflow("w", maxConcurrency=0), ["maxConcurrency"], id="max_concurrency_positive"),
            pytest.param({"name": "w", "nodes": "A"}, ["nodes: Input should be a valid list"], id="nodes_is_a_list"),
            pytest.param({"name": 5, "nodes": [step("A")]}, ["name: Input should be a valid string"], id="name_is_a_string"),
        ],
    )  # fmt: skip
    async def test_rejected(
        self, client: httpx.AsyncClient, body: dict[str, Any], fragments: list[str]
    ) -> None:
        await _assert_rejected_and_nothing_stored(client, body, fragments)

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            (b'{"name":"w","canvas":{"viewport":{"zoom":Infinity}},"nodes":[%s]}', "canvas.viewport.zoom: must be a finite number"),
            (b'{"name":"w","canvas":{"viewport":{"x":-Infinity}},"nodes":[%s]}', "canvas.viewport.x: must be a finite number"),
            (b'{"name":"w","nodes":[{"name":"A","nodeType":"step","executorKey":"builtin:echo","position":{"x":NaN}}]}', "nodes[0] ('A'): position.x must be a finite number"),
        ],
    )  # fmt: skip
    async def test_coordinates_must_be_finite(
        self, client: httpx.AsyncClient, body: bytes, fragment: str
    ) -> None:
        # Python's json (and so many clients) writes NaN and Infinity. Stored, they came
        # back as null and made SQLite's JSON functions fail: the workflow's run list
        # answered 500 database_error from then on. (Refused at save, not by the model:
        # definitions stored before still read.)
        if b"%s" in body:
            body = body % b'{"name":"A","nodeType":"step","executorKey":"builtin:echo"}'
        before = await _stored_count(client)
        response = await client.post(
            f"{API}/workflows", content=body, headers={"content-type": "application/json"}
        )
        assert_error(response, 400, "invalid_request", fragment)
        assert await _stored_count(client) == before

    async def test_config_must_be_data_a_run_can_carry(self, client: httpx.AsyncClient) -> None:
        # A lone surrogate in a config was a 500 (the definition could not be stored).
        body = b'{"name":"w","nodes":[{"name":"A","nodeType":"step","executorKey":"builtin:echo","config":{"k":"\\udc00"}}]}'
        before = await _stored_count(client)
        response = await client.post(
            f"{API}/workflows", content=body, headers={"content-type": "application/json"}
        )
        assert_error(response, 400, "invalid_request", "config.k is not valid Unicode")
        deep: Any = 1
        for _ in range(150):
            deep = [deep]
        await _assert_rejected_and_nothing_stored(
            client, workflow("w", step("A", config={"k": deep})), ["config.k[0]", "deeper than 100"]
        )
        assert await _stored_count(client) == before

    async def test_body_must_be_an_object(self, client: httpx.AsyncClient) -> None:
        await _assert_rejected_and_nothing_stored(client, [step("A")], ["body"])

    async def test_every_problem_is_reported_at_once(self, client: httpx.AsyncClient) -> None:
        body = workflow("w", node("A", "step"), valid("parallel", children=[step("B")]))
        error = await _assert_rejected_and_nothing_stored(client, body, ["('A')", "('P')"])
        assert [d["path"] for d in error["details"]] == ["nodes[0] ('A')", "nodes[1] ('P')"]


async def test_a_pool_strategy_argument_of_a_single_executor_step_is_its_own(
    client: httpx.AsyncClient,
) -> None:
    # Only a pool reads config.poolStrategy; an MCP tool may take an argument of that name.
    tool = step("A", config={"poolStrategy": "cheapest"})
    created = await client.post(f"{API}/workflows", json=workflow(unique("tool"), tool))
    assert created.status_code == 201, created.text
    assert created.json()["nodes"][0]["config"] == {"poolStrategy": "cheapest"}


async def test_an_update_with_an_unknown_pool_strategy_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    pool = node("A", "step", a2aPool=["web-agent"], config={"poolStrategy": "round_robin"})
    created = await client.post(f"{API}/workflows", json=workflow(unique("pool"), pool))
    assert created.status_code == 201, created.text
    url = f"{API}/workflows/{created.json()['id']}"
    bad = node("A", "step", a2aPool=["web-agent"], config={"poolStrategy": "random"})
    response = await client.put(url, json={"nodes": [bad]})
    assert_error(response, 400, "invalid_request", "nodes[0] ('A')", "poolStrategy 'random'")
    assert (await client.get(url)).json() == created.json()


async def test_a_name_holding_a_control_character_is_refused_and_nothing_stored(
    client: httpx.AsyncClient,
) -> None:
    # "a\u0000b" and a terminal escape were stored and shown to every client.
    await _assert_rejected_and_nothing_stored(
        client, workflow("evil\x1b[31m"), ["must not hold control characters (U+001B)"]
    )
    body = workflow(f"w-{uuid4().hex[:8]}", step("a\x00b"))
    await _assert_rejected_and_nothing_stored(
        client, body, ["node names must not hold control characters (U+0000)"]
    )
