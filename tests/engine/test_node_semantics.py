"""Each node type, CEL and templates, through the HTTP API on a real dev server."""

import asyncio
from typing import Any

import pytest

from tests.builders import condition, delay, echo, loop, router, transform
from tests.builders import node as any_node
from tests.support.platform import Platform


def names(run: dict[str, Any]) -> list[str]:
    return [n["nodeName"] for n in run["nodeRuns"]]


class TestSequence:
    async def test_steps_see_previous_content_and_outputs_by_name(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    transform("first", total="input.a + input.b"),
                    transform("second", doubled="previous_step_content.total * 2"),
                    echo(
                        "third",
                        fromFirst="{{ previous_step_outputs.first.total }}",
                        text="total={{ previous_step_outputs.first.total }}",
                    ),
                ]
            },
            {"a": 2, "b": 3},
        )
        assert run["status"] == "completed"
        assert names(run) == ["first", "second", "third"]
        assert run["nodeRuns"][1]["outputSnapshot"] == {"doubled": 10}
        # A whole-string template keeps the type; an embedded one renders as text.
        assert run["finalOutput"]["config"] == {"fromFirst": 5, "text": "total=5"}

    async def test_input_snapshot_is_the_rendered_config(self, platform: Platform) -> None:
        run = await platform.run(
            {"nodes": [echo("greet", message="Hello {{customerName}}")]}, {"customerName": "Ada"}
        )
        assert run["nodeRuns"][0]["inputSnapshot"] == {"message": "Hello Ada"}

    async def test_a_string_with_two_templates_renders_both_as_text(
        self, platform: Platform
    ) -> None:
        run = await platform.run(
            {"nodes": [echo("greet", message="{{ input.first }} {{ input.last }}")]},
            {"first": "Ada", "last": "Lovelace"},
        )
        assert run["status"] == "completed", run.get("errorSummary")
        assert run["finalOutput"]["config"] == {"message": "Ada Lovelace"}

    async def test_final_output_is_the_last_top_level_output(self, platform: Platform) -> None:
        run = await platform.run({"nodes": [transform("a", x="1"), transform("b", y="2")]})
        assert run["finalOutput"] == {"y": 2}

    async def test_a_division_by_zero_fails_the_node_instead_of_passing_null(
        self, platform: Platform
    ) -> None:
        # JSON has no Infinity: the value reached the step as null (found by an audit).
        for node in (echo("greet", x="{{ 1.0/0.0 }}"), transform("t", x="{'k': 0.0/0.0}")):
            run = await platform.run({"nodes": [node]})
            assert run["status"] == "failed", run
            assert "which JSON cannot carry" in run["errorSummary"], run["errorSummary"]
            assert run["nodeRuns"][0]["outputSnapshot"] is None
        # Compared inside CEL, an infinity is a value like any other.
        run = await platform.run(
            {"nodes": [condition("big", "1.0/0.0 > 1.0", transform("yes", v="1"))]}
        )
        assert run["status"] == "completed" and run["finalOutput"] == {"v": 1}, run

    async def test_string_of_a_bool_null_map_or_list_is_its_json_text(
        self, platform: Platform
    ) -> None:
        # cel-python wrote "True", "None" and its own internals
        # ("MapType({StringType('a'): …})"), which reached the step (found by an audit).
        run = await platform.run(
            {
                "nodes": [
                    echo(
                        "s",
                        b="{{ string(input.ok) }}",
                        n="{{ string(null) }}",
                        m="{{ string(input.order) }}",
                        text="order {{ string(input.order.items) }}",
                        d="{{ string(2.5) }}",
                        same="{{ string(true) == 'true' && type(string(true)) == string }}",
                    )
                ]
            },
            {"ok": True, "order": {"items": [1, "é"], "id": "o1"}},
        )
        assert run["status"] == "completed", run.get("errorSummary")
        assert run["finalOutput"]["config"] == {
            "b": "true",
            "n": "null",
            "m": '{"id":"o1","items":[1,"é"]}',
            "text": 'order [1,"é"]',
            "d": "2.5",
            "same": True,
        }
        run = await platform.run({"nodes": [echo("s", x="{{ string([1.0/0.0]) }}")]})
        assert run["status"] == "failed", run
        assert "which JSON cannot carry" in run["errorSummary"], run["errorSummary"]

    async def test_anything_compares_with_null_and_mismatches_say_cel_names(
        self, platform: Platform
    ) -> None:
        # `x != null` over a map step's output (skipped items are null) failed its run:
        # cel-python refused a map, list or number compared with null (found by an audit).
        run = await platform.run(
            {
                "nodes": [
                    transform(
                        "t",
                        kept="input.xs.filter(x, x != null).size()",
                        nulls="input.xs.filter(x, x == null).size()",
                        mixed="[1, 2.5, true, [1], null].filter(x, null != x).size()",
                    )
                ]
            },
            {"xs": [{"a": 1}, None, {"a": 2}, [3], 4]},
        )
        assert run["status"] == "completed", run.get("errorSummary")
        assert run["finalOutput"] == {"kept": 4, "nulls": 1, "mixed": 4}
        run = await platform.run(
            {"nodes": [transform("t", x="input.amount == 2")]}, {"amount": 2.0}
        )
        assert run["status"] == "failed"
        assert run["errorSummary"].endswith(
            "found no matching overload for '==' applied to (double, int)"
        ), run["errorSummary"]

    async def test_a_ternary_whose_condition_fails_says_why(self, platform: Platform) -> None:
        # A router's or a map's ternary said "found no matching overload for _?_:_ applied
        # to (CELEvalError, string, bool)" (found by an outside audit).
        ternary = "input.amount == 2 ? 'a' : 'b'"
        routed = router("r", ternary, {"a": [echo("ra")], "b": [echo("rb")]})
        mapped = any_node("m", "map", itemsCel=f"{ternary} == 'a' ? [1] : []", children=[echo("e")])
        for nodes in ([routed], [mapped]):
            run = await platform.run({"nodes": nodes}, {"amount": 2.0})
            assert run["status"] == "failed", run
            assert run["errorSummary"].endswith(
                "found no matching overload for '==' applied to (double, int)"
            ), run["errorSummary"]

    async def test_lists_and_maps_holding_null_compare_as_cel_says(
        self, platform: Platform
    ) -> None:
        # A step's output list with a null item compared with the list expected failed its
        # run: cel-python refused the null paired with a number inside lists and maps.
        run = await platform.run(
            {
                "nodes": [
                    transform("got", items="input.items"),
                    condition(
                        "same",
                        "previous_step_outputs.got.items == [1, 2]",
                        transform("equal", v="'equal'"),
                        falseSteps=[transform("differs", v="'differs'")],
                    ),
                    condition("changed", "input.meta != {'a': 1}", transform("yes", v="1")),
                    transform("last", nested="[[1]] == [[null]]", both="[null] == [null]"),
                ]
            },
            {"items": [1, None], "meta": {"a": None}},
        )
        assert run["status"] == "completed", run.get("errorSummary")
        assert names(run) == ["got", "same", "differs", "changed", "yes", "last"]
        assert run["finalOutput"] == {"nested": False, "both": True}
        # Other types inside a list still do not compare, as they do not outside one.
        run = await platform.run({"nodes": [transform("t", x="[1] == ['a']")]})
        assert run["status"] == "failed"
        assert run["errorSummary"].endswith(
            "found no matching overload for '==' applied to (list, list)"
        ), run["errorSummary"]

    async def test_a_failing_template_fails_the_step_with_the_expression(
        self, platform: Platform
    ) -> None:
        run = await platform.run({"nodes": [echo("greet", message="{{ input.missing }}")]})
        assert run["status"] == "failed"
        assert run["errorSummary"].startswith("Node 'greet' failed: CEL evaluation of")
        assert "missing" in run["errorSummary"]
        # It started and failed in its one attempt (0 would say it never started).
        (greet,) = run["nodeRuns"]
        assert greet["status"] == "failed" and greet["startedAt"] and greet["attempt"] == 1

    async def test_an_integer_cel_cannot_hold_fails_the_step_instead_of_hanging_the_run(
        self, platform: Platform
    ) -> None:
        # cel-python refuses integers beyond 64 bits; that used to fail the workflow task
        # itself, which Temporal retried forever: the run stayed `pending`.
        run = await platform.run(
            {
                "nodes": [
                    transform("constant", v="1"),
                    echo("greet", message="Hello {{ input.name }}"),
                ]
            },
            {"name": "Ada", "account": {"ids": [1, 2**70]}},
        )
        assert run["status"] == "failed", run
        assert names(run) == ["constant", "greet"]
        assert run["nodeRuns"][0]["status"] == "completed"
        assert run["errorSummary"] == (
            "Node 'greet' failed: CEL evaluation of 'input.name' failed: input.account.ids[1] "
            "is an integer outside CEL's 64-bit range "
            "(-9223372036854775808..9223372036854775807)"
        )

    async def test_a_type_as_a_value_fails_the_step_instead_of_hanging_the_run(
        self, platform: Platform
    ) -> None:
        # `type(x)` yields a CEL type, not data: serializing it failed the workflow task,
        # which Temporal retried forever (the run stayed `pending`).
        run = await platform.run(
            {"nodes": [echo("debug", kind="{{ type(input.count) }}")]}, {"count": 3}
        )
        assert run["status"] == "failed", run
        assert run["errorSummary"] == (
            "Node 'debug' failed: CEL evaluation of 'type(input.count)' failed: "
            "it yields the type int, which is not a value a step can use"
        )
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "each",
                        "nodeType": "map",
                        "itemsCel": "[int, string]",
                        "children": [transform("t", v="item")],
                    }
                ]
            }
        )
        assert run["status"] == "failed", run
        assert "it yields the type int" in run["errorSummary"]

    async def test_an_output_nested_too_deep_fails_the_step_instead_of_hanging_the_run(
        self, platform: Platform
    ) -> None:
        # Each iteration wraps the previous output: past ~195 levels the outbox's payload
        # could not be decoded (pydantic reads JSON 200 deep) and the run stayed pending.
        run = await platform.run(
            {
                "nodes": [
                    transform("seed", v="0"),
                    {
                        "name": "wrap-loop",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 220},
                        "children": [transform("wrap", v="previous_step_content")],
                    },
                ]
            }
        )
        assert run["status"] == "failed", run["status"]
        assert run["errorSummary"] == (
            "Node 'wrap' failed: step output nests deeper than 150 levels"
        )
        wraps = [n for n in run["nodeRuns"] if n["nodeName"] == "wrap"]
        assert [n["status"] for n in wraps[-2:]] == ["completed", "failed"]


class TestParallel:
    async def test_children_outputs_are_keyed_by_name(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "fan",
                        "nodeType": "parallel",
                        "children": [transform("left", v="1"), transform("right", v="2")],
                    },
                    transform(
                        "after", sum="previous_step_content.left.v + previous_step_content.right.v"
                    ),
                ]
            }
        )
        assert run["status"] == "completed", run
        assert run["finalOutput"] == {"sum": 3}
        fan = next(n for n in run["nodeRuns"] if n["nodeName"] == "fan")
        assert fan["nodeType"] == "parallel" and fan["status"] == "completed"
        assert fan["outputSnapshot"] == {"left": {"v": 1}, "right": {"v": 2}}

    async def test_after_it_a_name_reads_what_its_child_set_in_any_order(
        self, platform: Platform
    ) -> None:
        # Each child sees what came before the parallel, "x" here; only the child that
        # sets "x" again decides what it reads afterwards, wherever it stands.
        for children in (
            [{**echo("x", n="inner"), "id": "inner_x"}, echo("y")],
            [echo("y"), {**echo("x", n="inner"), "id": "inner_x"}],
        ):
            run = await platform.run(
                {
                    "nodes": [
                        echo("x", n="outer"),
                        {"name": "fan", "nodeType": "parallel", "children": children},
                        echo("b", n="{{ previous_step_outputs.x.config.n }}"),
                    ]
                }
            )
            assert run["status"] == "completed", run.get("errorSummary")
            assert run["finalOutput"]["config"] == {"n": "inner"}, [c["name"] for c in children]

    async def test_concurrency_is_bounded_by_max_concurrency(self, platform: Platform) -> None:
        slow = [
            {
                "name": f"s{i}",
                "nodeType": "step",
                "executorKey": "builtin:delay",
                "config": {"seconds": 0.4},
            }
            for i in range(4)
        ]
        run = await platform.run(
            {
                "maxConcurrency": 2,
                "nodes": [{"name": "fan", "nodeType": "parallel", "children": slow}],
            }
        )
        assert run["status"] == "completed", run
        steps = [n for n in run["nodeRuns"] if n["nodeType"] == "step"]
        starts = sorted(n["startedAt"] for n in steps)
        ends = sorted(n["finishedAt"] for n in steps)
        # With a bound of 2, the third step can only start after one of the first two ended.
        assert starts[2] >= ends[0]

    async def test_a_failing_child_cancels_its_siblings_and_fails_the_run(
        self, platform: Platform
    ) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "fan",
                        "nodeType": "parallel",
                        "children": [
                            {
                                "name": "slow",
                                "nodeType": "step",
                                "executorKey": "builtin:delay",
                                "config": {"seconds": 30},
                            },
                            {
                                "name": "bad",
                                "nodeType": "step",
                                "executorKey": "builtin:http",
                                "config": {"url": f"{platform.peer_url}/status/400"},
                            },
                        ],
                    },
                    transform("never", x="1"),
                ]
            }
        )
        assert run["status"] == "failed"
        assert run["errorSummary"].startswith("Node 'bad' failed:")
        by_name = {n["nodeName"]: n for n in run["nodeRuns"]}
        assert by_name["slow"]["status"] == "cancelled"
        # Which sibling to look at (it said only "cancelled": found by an audit).
        assert by_name["slow"]["error"] == "cancelled: 'bad' failed beside it"
        assert by_name["fan"]["status"] == "failed"
        assert "never" not in by_name

    async def test_a_sibling_inside_a_nested_block_says_which_outer_child_failed(
        self, platform: Platform
    ) -> None:
        slow = {"name": "slow", "nodeType": "step", "executorKey": "builtin:delay"}
        inner = {"name": "inner", "nodeType": "parallel", "children": [
            {**slow, "config": {"seconds": 30}}, {**slow, "id": "slow2", "name": "slow2",
                                                  "config": {"seconds": 30}},
        ]}  # fmt: skip
        bad = {
            "name": "bad",
            "nodeType": "step",
            "executorKey": "builtin:http",
            "config": {"url": f"{platform.peer_url}/status/400"},
        }
        run = await platform.run(
            {"nodes": [{"name": "fan", "nodeType": "parallel", "children": [inner, bad]}]}
        )
        assert run["status"] == "failed"
        by_name = {n["nodeName"]: n for n in run["nodeRuns"]}
        for name in ("slow", "slow2", "inner"):
            assert by_name[name]["status"] == "cancelled", by_name[name]
            assert by_name[name]["error"] == "cancelled: 'bad' failed beside it", by_name[name]

    async def test_a_cancelled_runs_steps_say_only_cancelled(self, platform: Platform) -> None:
        wf = await platform.create(
            {
                "nodes": [
                    {
                        "name": "fan",
                        "nodeType": "parallel",
                        "children": [delay("d", 30), delay("e", 30)],
                    }
                ]
            }
        )
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        await asyncio.sleep(0.5)
        await platform.api.post(f"/api/v1/workflows/{wf}/runs/{run_id}/cancel")
        run = await platform.wait(wf, run_id)
        [d] = [n for n in run["nodeRuns"] if n["nodeName"] == "d"]
        assert d["status"] == "cancelled" and d["error"] == "cancelled", d


class TestCondition:
    TREE = {
        "nodes": [
            transform("A", seen="input.routeToTrue"),
            {
                "name": "B",
                "nodeType": "condition",
                "conditionCel": "input.routeToTrue == true",
                "trueSteps": [
                    transform("C", v="'c'"),
                    transform("E", v="'e'"),
                    transform("G", v="'g'"),
                ],
                "falseSteps": [
                    transform("D", v="'d'"),
                    transform("F", v="'f'"),
                    transform("H", v="'h'"),
                ],
            },
        ]
    }

    async def test_true_branch_runs_in_sequence(self, platform: Platform) -> None:
        run = await platform.run(self.TREE, {"routeToTrue": True})
        assert names(run) == ["A", "B", "C", "E", "G"]
        assert run["finalOutput"] == {"v": "g"}

    async def test_false_branch_runs_and_untaken_branch_has_no_node_runs(
        self, platform: Platform
    ) -> None:
        run = await platform.run(self.TREE, {"routeToTrue": False})
        assert names(run) == ["A", "B", "D", "F", "H"]
        b = run["nodeRuns"][1]
        assert (
            b["inputSnapshot"]["result"] is False and b["inputSnapshot"]["branch"] == "falseSteps"
        )

    async def test_a_non_bool_condition_fails_the_node_clearly(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "B",
                        "nodeType": "condition",
                        "conditionCel": "input.kind",
                        "trueSteps": [transform("C", v="1")],
                    }
                ]
            },
            {"kind": "enterprise"},
        )
        assert run["status"] == "failed"
        assert run["errorSummary"] == (
            "Node 'B' failed: conditionCel must yield a bool, got string 'enterprise'"
        )

    async def test_a_failed_condition_shows_its_expression(self, platform: Platform) -> None:
        run = await platform.run(
            {"nodes": [condition("B", "input.kind", transform("C", v="1"))]}, {"kind": "pro"}
        )
        [b] = run["nodeRuns"]
        assert b["status"] == "failed" and b["inputSnapshot"] == {"conditionCel": "input.kind"}

    async def test_a_condition_failed_by_its_branch_shows_the_branch_taken(
        self, platform: Platform
    ) -> None:
        run = await platform.run(
            {"nodes": [condition("B", "input.go", transform("C", v="input.missing"))]},
            {"go": True},
        )
        [b] = [n for n in run["nodeRuns"] if n["nodeName"] == "B"]
        assert b["status"] == "failed" and b["error"].startswith("child 'C' failed")
        assert b["inputSnapshot"] == {
            "conditionCel": "input.go",
            "result": True,
            "branch": "trueSteps",
        }

    async def test_empty_false_branch_runs_nothing_and_outputs_null(
        self, platform: Platform
    ) -> None:
        run = await platform.run(
            {
                "nodes": [
                    transform("A", v="'a'"),
                    {
                        "name": "B",
                        "nodeType": "condition",
                        "conditionCel": "false",
                        "trueSteps": [transform("C", v="1")],
                    },
                    transform("D", seen="previous_step_content"),
                ]
            }
        )
        assert run["status"] == "completed" and names(run) == ["A", "B", "D"]
        assert run["nodeRuns"][1]["outputSnapshot"] is None
        assert run["finalOutput"] == {"seen": None}


class TestRouter:
    ROUTER = {
        "nodes": [
            {
                "name": "research-router",
                "nodeType": "router",
                "conditionCel": "input.strategy",
                "choices": [
                    {
                        "name": "tech",
                        "steps": [transform("hn", v="'hn'"), transform("deep", v="'deep'")],
                    },
                    {"name": "general", "steps": [transform("web", v="'web'")]},
                ],
            }
        ]
    }

    async def test_the_selected_choice_runs_its_steps_in_sequence(self, platform: Platform) -> None:
        run = await platform.run(self.ROUTER, {"strategy": "tech"})
        assert names(run) == ["research-router", "hn", "deep"]
        assert run["finalOutput"] == {"v": "deep"}

    async def test_a_list_selects_several_choices(self, platform: Platform) -> None:
        router = {"nodes": [{**self.ROUTER["nodes"][0], "conditionCel": "step_choices"}]}
        run = await platform.run(router)
        assert names(run) == ["research-router", "hn", "deep", "web"]
        assert run["finalOutput"] == {"tech": {"v": "deep"}, "general": {"v": "web"}}

    async def test_a_choice_named_twice_is_selected_once(self, platform: Platform) -> None:
        # It ran once but output {"tech": …}, as if several choices had been selected.
        run = await platform.run(self.ROUTER, {"strategy": ["tech", "tech"]})
        assert run["status"] == "completed", run["errorSummary"]
        assert names(run) == ["research-router", "hn", "deep"]
        assert run["finalOutput"] == {"v": "deep"}
        [router] = [n for n in run["nodeRuns"] if n["nodeName"] == "research-router"]
        assert router["inputSnapshot"]["selected"] == ["tech"]

    async def test_a_name_in_another_unicode_form_selects_its_choice(
        self, platform: Platform
    ) -> None:
        # Saved decomposed ("cafe" + U+0301), typed composed (U+00E9): one name to anyone
        # reading it, and one name when a definition is saved (found by an audit).
        decomposed, composed = "cafe\u0301", "caf\u00e9"
        router = {
            "nodes": [
                {
                    "name": "r",
                    "nodeType": "router",
                    "conditionCel": "input.c",
                    "choices": [
                        {"name": decomposed, "steps": [transform("coffee", v="'yes'")]},
                        {"name": "other", "steps": [transform("none", v="'no'")]},
                    ],
                }
            ]
        }
        for selected in (composed, [composed, decomposed]):
            run = await platform.run(router, {"c": selected})
            assert run["status"] == "completed", run["errorSummary"]
            assert names(run) == ["r", "coffee"] and run["finalOutput"] == {"v": "yes"}
            [shown] = [n for n in run["nodeRuns"] if n["nodeName"] == "r"]
            assert shown["inputSnapshot"]["selected"] == [decomposed]

    async def test_an_unknown_choice_fails_naming_value_and_choices(
        self, platform: Platform
    ) -> None:
        run = await platform.run(self.ROUTER, {"strategy": "sports"})
        assert run["status"] == "failed"
        assert run["errorSummary"] == (
            "Node 'research-router' failed: router selected 'sports', which is not a choice "
            "(choices: tech, general)"
        )

    async def test_a_failed_router_shows_its_expression(self, platform: Platform) -> None:
        run = await platform.run(self.ROUTER, {"strategy": "sports"})
        [router] = run["nodeRuns"]
        assert router["status"] == "failed"
        assert router["inputSnapshot"] == {"conditionCel": "input.strategy"}

    async def test_a_router_failed_by_a_choice_shows_the_selection(
        self, platform: Platform
    ) -> None:
        router = self.ROUTER["nodes"][0]
        tech = {"name": "tech", "steps": [transform("hn", v="input.missing")]}
        failing = {**router, "choices": [tech, router["choices"][1]]}
        run = await platform.run({"nodes": [failing]}, {"strategy": "tech"})
        [r] = [n for n in run["nodeRuns"] if n["nodeName"] == "research-router"]
        assert r["status"] == "failed" and r["error"].startswith("child 'hn' failed")
        assert r["inputSnapshot"] == {"conditionCel": "input.strategy", "selected": ["tech"]}

    async def test_an_empty_selection_fails_as_selecting_no_choice(
        self, platform: Platform
    ) -> None:
        # It completed with {} and ran nothing: a router picks a choice.
        run = await platform.run(self.ROUTER, {"strategy": []})
        assert run["status"] == "failed"
        assert run["errorSummary"] == (
            "Node 'research-router' failed: conditionCel selected no choice (an empty list)"
        )
        assert names(run) == ["research-router"]


class TestLoop:
    async def test_runs_max_iterations_and_outputs_a_list(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 3},
                        "children": [transform("tick", i="iteration")],
                    }
                ]
            }
        )
        assert run["status"] == "completed"
        assert run["finalOutput"] == [{"i": 0}, {"i": 1}, {"i": 2}]
        assert names(run).count("tick") == 3

    async def test_end_condition_sees_iteration_and_its_outputs(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {
                            "maxIterations": 10,
                            "endConditionCel": "iteration_outputs.tick.i >= 1 && iteration == 1",
                        },
                        "children": [transform("tick", i="iteration")],
                    }
                ]
            }
        )
        assert run["finalOutput"] == [{"i": 0}, {"i": 1}]
        loop = next(n for n in run["nodeRuns"] if n["nodeName"] == "L")
        assert loop["inputSnapshot"] == {"iterations": 2, "endedBy": "endConditionCel"}
        ids = [n["id"] for n in run["nodeRuns"] if n["nodeName"] == "tick"]
        assert len(set(ids)) == 2  # one node run per iteration

    async def test_a_failed_loop_shows_how_it_would_end_and_how_far_it_got(
        self, platform: Platform
    ) -> None:
        # The second iteration's child fails: one iteration done, of at most 5.
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 5, "endConditionCel": "iteration >= 3"},
                        "children": [transform("tick", v="iteration == 0 ? 1 : input.missing")],
                    }
                ]
            }
        )
        assert run["status"] == "failed"
        loop = next(n for n in run["nodeRuns"] if n["nodeName"] == "L")
        assert loop["status"] == "failed" and loop["error"].startswith("child 'tick' failed")
        assert loop["inputSnapshot"] == {
            "endConditionCel": "iteration >= 3",
            "maxIterations": 5,
            "iterations": 1,
        }

    async def test_a_failed_loop_without_an_end_condition_shows_its_bound(
        self, platform: Platform
    ) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 3},
                        "children": [transform("tick", v="input.missing")],
                    }
                ]
            }
        )
        loop = next(n for n in run["nodeRuns"] if n["nodeName"] == "L")
        assert loop["status"] == "failed"
        assert loop["inputSnapshot"] == {"maxIterations": 3, "iterations": 0}


class TestNesting:
    async def test_any_container_nests_any_node(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 2},
                        "children": [
                            {
                                "name": "C",
                                "nodeType": "condition",
                                "conditionCel": "iteration == 0",
                                "trueSteps": [
                                    {
                                        "name": "P",
                                        "nodeType": "parallel",
                                        "children": [
                                            transform("p1", v="1"),
                                            transform("p2", v="2"),
                                        ],
                                    }
                                ],
                                "falseSteps": [
                                    {
                                        "name": "R",
                                        "nodeType": "router",
                                        "conditionCel": "'x'",
                                        "choices": [
                                            {"name": "x", "steps": [transform("rx", v="3")]},
                                            {"name": "y", "steps": [transform("ry", v="4")]},
                                        ],
                                    }
                                ],
                            }
                        ],
                    }
                ]
            }
        )
        assert run["status"] == "completed", run
        assert run["finalOutput"] == [{"p1": {"v": 1}, "p2": {"v": 2}}, {"v": 3}]


class TestNestedLoops:
    async def test_an_inner_loop_restores_the_outer_iteration(self, platform: Platform) -> None:
        run = await platform.run(
            {
                "nodes": [
                    {
                        "name": "outer",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 2},
                        "children": [
                            {
                                "name": "inner",
                                "nodeType": "loop",
                                "loopConfig": {"maxIterations": 2},
                                "children": [transform("in", i="iteration")],
                            },
                            transform("after", outer="iteration"),
                        ],
                    }
                ]
            }
        )
        assert run["status"] == "completed", run
        assert run["finalOutput"] == [{"outer": 0}, {"outer": 1}]


class TestHistoryBudget:
    async def test_a_run_near_the_history_limit_fails_clearly(self, platform: Platform) -> None:
        from activities.run_start import start_run_workflow
        from activities.store.records import RunRecord
        from temporal_workflows.definition import WorkflowSpec

        spec = WorkflowSpec.model_validate(
            {
                "name": "long",
                "nodes": [
                    {
                        "id": "L",
                        "name": "L",
                        "nodeType": "loop",
                        "loopConfig": {"maxIterations": 50},
                        "children": [
                            {
                                "id": "t",
                                "name": "tick",
                                "nodeType": "step",
                                # Remote: inline built-ins add no history events.
                                "executorKey": "builtin:delay",
                                "config": {"seconds": 0},
                            }
                        ],
                    }
                ],
            }
        )
        wf = await platform.create(
            {"nodes": [{"name": "x", "nodeType": "step", "executorKey": "builtin:echo"}]}
        )
        record = RunRecord(
            id="run-budget-1",
            workflow_definition_id=wf,
            workflow_version=1,
            definition_snapshot=spec,
        )
        await platform.store.insert_run(record)
        await start_run_workflow(
            platform.client, record, task_queue=platform.task_queue, history_event_budget=60
        )
        run = await platform.wait(wf, "run-budget-1")
        assert run["status"] == "failed"
        assert "near Temporal's limit of 51,200" in run["errorSummary"]


class TestTransform:
    async def test_transform_runs_inline_and_is_recorded(self, platform: Platform) -> None:
        run = await platform.run(
            {"nodes": [transform("calc", total="input.a * 2", text="'n=' + string(input.a)")]},
            {"a": 21},
        )
        assert run["status"] == "completed"
        node = run["nodeRuns"][0]
        assert node["outputSnapshot"] == {"total": 42, "text": "n=21"}
        assert node["resolvedExecutor"]["inline"] is True and node["attempt"] == 1

    async def test_a_transform_that_fails_honours_on_error(self, platform: Platform) -> None:
        bad = transform("bad", x="input.missing")
        bad["stepConfig"] = {"onError": "skip"}
        run = await platform.run({"nodes": [bad, transform("after", y="1")]})
        assert run["status"] == "completed"
        assert [n["status"] for n in run["nodeRuns"]] == ["skipped", "completed"]
        assert "missing" in run["nodeRuns"][0]["error"]

    async def test_a_transform_expression_is_checked_at_save(self, platform: Platform) -> None:
        response = await platform.api.post(
            "/api/v1/workflows",
            json={"name": "bad-transform", "nodes": [transform("calc", total="input.a *")]},
        )
        assert response.status_code == 400
        assert "config.map.total" in response.json()["error"]["message"]


async def test_a_new_run_renders_non_ascii_in_an_object_in_text_as_written(
    platform: Platform,
) -> None:
    # The starter sets templatesKeepUnicode: it read 'v={"k":"\u00e9\u2713"}'.
    run = await platform.run({"nodes": [echo("say", v="v={{ input.o }}")]}, {"o": {"k": "é✓"}})
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"]["config"]["v"] == 'v={"k":"é✓"}'


WRONG_RESULTS = {
    "condition": (
        condition("N", "input.kind", echo("t")),
        "conditionCel must yield a bool, got string 'yes'",
    ),
    "null condition": (
        condition("N", "input.none", echo("t")),
        "conditionCel must yield a bool, got null",
    ),
    "end condition": (
        loop("N", echo("t"), loopConfig={"maxIterations": 2, "endConditionCel": "input.kind"}),
        "endConditionCel must yield a bool, got string 'yes'",
    ),
    "router": (
        router("N", "true", {"a": [echo("a")], "b": [echo("b")]}),
        "conditionCel must yield a choice name or a list of names, got bool true",
    ),
    "map": (
        any_node("N", "map", itemsCel="{'a': 1, 'b': [null, 2u]}", children=[echo("t")]),
        "itemsCel must yield a list, got map {'a': 1, 'b': [null, 2u]}",
    ),
}


@pytest.mark.parametrize(("container", "error"), WRONG_RESULTS.values(), ids=WRONG_RESULTS.keys())
async def test_a_result_of_the_wrong_type_is_named_by_its_cel_type_alike_for_every_field(
    platform: Platform, container: dict[str, Any], error: str
) -> None:
    # Before, each said it its own way, in Python's names: "got str 'yes'", "got 'yes'",
    # "got NoneType None", "got True", "got dict".
    run = await platform.run({"nodes": [container]}, {"kind": "yes", "none": None})
    assert run["status"] == "failed"
    assert run["errorSummary"] == f"Node 'N' failed: {error}"
