"""What a CEL expression may cost: refused at save when it cannot fit, stopped by a
deterministic step budget at run time, and never a memory bomb through error messages."""

from __future__ import annotations

import contextvars
import time
from typing import Any

import pytest

from temporal_workflows.builtins import BuiltinError, transform
from temporal_workflows.cel_budget import (
    EVALUATION_STEPS,
    MAX_COMPREHENSION_NESTING,
    MAX_STEPS,
    MAX_TASK_STEPS,
    MAX_TREE_DEPTH,
    Budget,
    BudgetExceeded,
    TaskBudget,
    charge_results,
    charge_variables,
    share_per_task,
    task_share_low,
)
from temporal_workflows.expressions import ExpressionError, check_expression, evaluate, render


def nested_exists(depth: int, over: str = "input.items") -> str:
    source = "false"
    for level in range(depth):
        source = f"{over}.exists(v{level}, {source})"
    return source


def literal(n: int) -> str:
    return "[" + ", ".join(str(i) for i in range(n)) + "]"


def spent(source: str, scope: dict[str, Any]) -> int:
    budget = Budget()
    evaluate(source, scope, budget)
    return budget.limit - budget.left


class TestRefusedAtSave:
    def test_ten_nested_exists_are_refused_naming_the_nesting(self) -> None:
        with pytest.raises(ExpressionError) as info:
            check_expression(nested_exists(10))
        assert "is too costly: its comprehensions" in str(info.value)
        assert f"nest 10 deep; at most {MAX_COMPREHENSION_NESTING} may" in str(info.value)

    def test_nesting_up_to_the_limit_is_accepted(self) -> None:
        check_expression(nested_exists(MAX_COMPREHENSION_NESTING))
        check_expression("input.a.map(x, x + 1).filter(y, y > 2).exists(z, z == 3)")

    def test_comprehensions_over_literal_lists_that_surely_overspend_are_refused(self) -> None:
        with pytest.raises(ExpressionError) as info:
            check_expression(nested_exists(3, over=literal(40)))
        assert "evaluating it takes at least" in str(info.value)
        assert f"the budget is {EVALUATION_STEPS}" in str(info.value)

    def test_a_tree_deeper_than_the_stack_allows_is_refused(self) -> None:
        with pytest.raises(ExpressionError, match=f"nests too deeply .*at most {MAX_TREE_DEPTH}"):
            check_expression("(" * 60 + "1" + ")" * 60)

    def test_a_long_chain_of_conditions_is_refused_as_too_deep(self) -> None:
        with pytest.raises(ExpressionError, match="nests too deeply"):
            check_expression(" || ".join(["input.a == 1"] * 300))

    def test_the_message_shortens_a_long_source(self) -> None:
        with pytest.raises(ExpressionError) as info:
            check_expression(nested_exists(10))
        assert len(str(info.value)) < 400


# A comprehension's result holding one input string 1,000 times (shared, not copied).
SHARED_STRING_BOMB = "input.l.map(a, input.l.map(b, input.l.map(c, input.s)))"


class TestStoppedAtRunTime:
    def test_nested_exists_over_big_input_lists_stop_within_a_second(self) -> None:
        scope = {"input": {"items": list(range(100))}}  # 10^6 iterations unbounded
        started = time.perf_counter()
        with pytest.raises(ExpressionError) as info:
            evaluate(nested_exists(3), scope)
        assert time.perf_counter() - started < 5  # about 0.1 s on an idle core
        message = str(info.value)
        assert message.startswith("CEL evaluation of 'input.items.exists(v2, ")
        assert f"stopped: it needs more than {MAX_STEPS} steps" in message
        assert "docs/semantics.md" in message

    def test_operators_pay_for_the_size_of_what_they_read(self) -> None:
        # 1,000 membership tests over 100,000 elements: few nodes, 10^8 comparisons.
        scope = {"input": {"few": list(range(1_000)), "many": list(range(100_000))}}
        with pytest.raises(ExpressionError, match="stopped"):
            evaluate("input.few.map(x, x in input.many)", scope)

    def test_conversions_pay_for_what_they_read(self) -> None:
        scope = {"input": {"few": list(range(1_000)), "many": list(range(100_000))}}
        with pytest.raises(ExpressionError, match="stopped"):
            evaluate("input.few.map(x, string(input.many))", scope)

    def test_min_pays_for_its_list(self) -> None:
        scope = {"input": {"few": list(range(1_000)), "many": list(range(100_000))}}
        with pytest.raises(ExpressionError, match="stopped"):
            evaluate("input.few.map(x, input.many.min())", scope)

    def test_a_result_sharing_one_big_string_a_thousand_times_pays_for_its_size(self) -> None:
        # A few thousand steps to make; 200 MB (and minutes) to copy out and serialise.
        scope = {"input": {"l": list(range(10)), "s": "a" * 200_000}}
        started = time.perf_counter()
        with pytest.raises(ExpressionError, match="stopped"):
            evaluate(SHARED_STRING_BOMB, scope)
        assert time.perf_counter() - started < 2

    def test_a_run_started_before_results_were_charged_evaluates_as_it_did(self) -> None:
        scope = {"input": {"l": list(range(10)), "s": "a" * 50_000}}  # 50 MB out
        with pytest.raises(ExpressionError, match="stopped"):
            evaluate(SHARED_STRING_BOMB, scope)

        def uncharged() -> Any:
            charge_results(False)
            return evaluate(SHARED_STRING_BOMB, scope)

        value = contextvars.copy_context().run(uncharged)
        assert len(value) == 10 and value[9][9][9] == "a" * 50_000

    def test_a_big_result_within_the_budget_is_returned(self) -> None:
        scope = {"input": {"s": "a" * 1_000_000}}  # ~1,000 steps to copy out
        assert evaluate("input.s + 'b'", scope) == "a" * 1_000_000 + "b"

    def test_reading_one_element_of_a_big_list_is_cheap(self) -> None:
        scope = {"input": {"items": list(range(100_000))}}
        assert evaluate("input.items[99999] == 99999 && size(input.items) > 0", scope) is True

    def test_an_ordinary_filter_over_a_thousand_items_fits(self) -> None:
        items = [{"price": i, "name": f"n{i}"} for i in range(1_000)]
        value = evaluate(
            "input.items.filter(i, i.price > 990).map(i, i.name)", {"input": {"items": items}}
        )
        assert value == [f"n{i}" for i in range(991, 1_000)]

    def test_the_cost_is_the_same_every_time(self) -> None:
        scope = {"input": {"items": list(range(50))}}
        source = "input.items.filter(x, x % 3 == 0).map(x, x * 2)"
        assert spent(source, scope) == spent(source, scope)

    def test_a_rendered_config_shares_one_budget(self) -> None:
        scope = {"input": {"items": list(range(1_000))}}
        one = "{{ input.items.filter(x, x > 1) }}"
        render({"a": one}, scope)  # one fits
        with pytest.raises(ExpressionError, match="stopped"):
            render({"a": one, "b": [one, one], "c": f"{one} {one}"}, scope)

    def test_a_transform_map_shares_one_budget(self) -> None:
        variables = {"input": {"items": list(range(1_000))}}
        source = "input.items.filter(x, x > 1)"
        transform({"map": {"a": source}}, variables)
        with pytest.raises(BuiltinError, match="stopped"):
            transform({"map": {k: source for k in "abcdef"}}, variables)


class TestErrorsStaySmall:
    """cel-python's `||`, `&&`, `exists` and `all` put both failed operands' text in their
    message: it doubled per operand (40 operands: far more memory than a machine has)."""

    @pytest.mark.parametrize("operator", ["||", "&&"])
    def test_a_chain_of_failing_operands_reports_the_first_error(self, operator: str) -> None:
        started = time.perf_counter()
        with pytest.raises(ExpressionError) as info:
            evaluate(f" {operator} ".join(["input.nope"] * 40), {"input": {}})
        assert time.perf_counter() - started < 2
        assert len(str(info.value)) < 1_000
        assert "no such member in mapping: 'nope'" in str(info.value)

    @pytest.mark.parametrize("macro", ["exists", "all"])
    def test_a_predicate_failing_on_every_element_reports_one_error(self, macro: str) -> None:
        with pytest.raises(ExpressionError) as info:
            evaluate(f"input.items.{macro}(x, x.nope)", {"input": {"items": [{}] * 60}})
        assert len(str(info.value)) < 1_000

    def test_a_predicate_that_is_not_a_bool_is_an_error(self) -> None:
        with pytest.raises(ExpressionError, match=r"exists\(\) needs a bool predicate"):
            evaluate("input.items.exists(x, x)", {"input": {"items": list(range(60))}})


class TestSemanticsKept:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("[1, 2, 3].exists(x, x == 2)", True),
            ("[1, 2, 3].exists(x, x == 5)", False),
            ("[1, 2, 3].all(x, x > 0)", True),
            ("[1, 2, 3].all(x, x > 1)", False),
            ("[1, 2, 3].exists_one(x, x > 2)", True),
            ("[1, 2, 3].exists_one(x, x > 1)", False),
            ("[].exists(x, x)", False),
            ("[].all(x, x)", True),
            # An element that decides wins over another's error, in either order.
            ("[0, 1].exists(x, 1 / x == 1)", True),
            ("[1, 0].all(x, 1 / x == 2)", False),
            ("{'a': 1, 'b': 2}.exists(k, k == 'b')", True),
            ("input.nope || true", True),
            ("false && input.nope", False),
            ("true || false", True),
            ("true && false", False),
            ("type(1) == int", True),
            ("int('3') + 1", 4),
        ],
    )
    def test_results(self, source: str, expected: Any) -> None:
        assert evaluate(source, {"input": {}}) == expected

    @pytest.mark.parametrize(
        "source",
        [
            "[0, 1].all(x, 1 / x == 1)",
            "[0, 2].exists(x, 1 / x == 1)",
            "[0].exists_one(x, 1 / x == 1)",
        ],
    )
    def test_an_error_nothing_outweighs_is_the_result(self, source: str) -> None:
        with pytest.raises(ExpressionError, match="divide by zero"):
            evaluate(source, {})

    def test_a_non_bool_operand_of_or_is_an_error(self) -> None:
        with pytest.raises(ExpressionError, match="no matching overload"):
            evaluate("1 || 2", {})


def test_a_task_budget_is_shared_within_a_task_and_fresh_in_the_next() -> None:
    task = [1]
    shared = TaskBudget(lambda: task[0], steps=100)
    first = Budget(steps=80, shared=shared.current())
    first.spend(60)
    second = Budget(steps=80, shared=shared.current())
    with pytest.raises(BudgetExceeded, match="together need more than 100 steps"):
        second.spend(60)  # fits its own 80, not what the task has left
    task[0] = 7  # the next workflow task
    Budget(steps=80, shared=shared.current()).spend(60)


def test_an_evaluation_outside_a_workflow_has_only_its_own_budget() -> None:
    for _ in range(3):  # three evaluations of 30,000 steps each: no task to share with
        evaluate(
            "input.l.exists(a, input.l.exists(b, a + b < 0))", {"input": {"l": list(range(30))}}
        )


def _in_a_task(
    steps: int | None, evaluation_steps: int | None, source: str, scope: dict[str, Any]
) -> str:
    """The error of evaluating `source` in a workflow task as a run with these budgets
    evaluates it (None, None: a run started before either existed)."""

    def run() -> str:
        if steps is not None:
            share_per_task(TaskBudget(lambda: 1, steps, evaluation_steps))
        # Runs started before EVALUATION_STEPS started before variables were charged too.
        charge_variables(evaluation_steps is not None)
        with pytest.raises(ExpressionError) as info:
            evaluate(source, scope)
        return str(info.value)

    return contextvars.copy_context().run(run)


def test_an_evaluation_in_a_run_started_now_stops_at_its_own_budget() -> None:
    # 10,000 steps: at most about 0.4 s of a core here, well inside Temporal's 2 s.
    scope = {"input": {"items": list(range(100))}}
    started = time.perf_counter()
    message = _in_a_task(MAX_TASK_STEPS, EVALUATION_STEPS, nested_exists(3), scope)
    assert time.perf_counter() - started < 2
    assert f"stopped: it needs more than {EVALUATION_STEPS} steps" in message
    assert f"each evaluation may take {EVALUATION_STEPS};" in message


@pytest.mark.parametrize(("share", "evaluation"), [(None, None), (50_000, None), (100_000, None)])
def test_runs_started_before_evaluate_as_they_did(share: int | None, evaluation: None) -> None:
    # They carry their budgets in their input (or none): replayed, each evaluation still
    # stops where it stopped when they ran.
    scope = {"input": {"items": list(range(100))}}
    message = _in_a_task(share, evaluation, nested_exists(3), scope)
    assert f"stopped: it needs more than {MAX_STEPS} steps" in message


def test_compiled_programs_kept_are_bounded_least_recently_used_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thousand long expressions saved grew the API by 1.4 GB for good: the programs kept
    are bounded by their sources' length, and one let go compiles again when next used."""
    from temporal_workflows import expressions

    monkeypatch.setattr(expressions, "PROGRAMS_KEPT_CHARS", 2_000)
    monkeypatch.setattr(expressions, "_PROGRAMS", type(expressions._PROGRAMS)())
    monkeypatch.setattr(expressions, "_kept_chars", 0)
    sources = [f"input.a == {i} || input.b == '{'x' * 80}{i}'" for i in range(100)]
    hot = "input.a + 1"
    for source in sources:
        assert expressions.evaluate(hot, {"input": {"a": 1}}) == 2
        assert expressions.evaluate(source, {"input": {"a": -1, "b": ""}}) is False
    kept = expressions._PROGRAMS
    assert 0 < expressions._kept_chars <= 2_000
    assert expressions._kept_chars == sum(len(s) for s in kept)
    assert hot in kept and sources[0] not in kept and sources[-1] in kept
    assert expressions.evaluate(sources[0], {"input": {"a": 0, "b": ""}}) is True


def test_converting_a_variable_is_charged_to_the_tasks_share_not_the_evaluation() -> None:
    """`previous_step_outputs.small.x` converts every earlier output: 45,000 elements of
    them (11,250 steps) fit the task's 50,000-step share, though not an evaluation's own
    10,000 (charged there, such an expression failed once earlier outputs grew)."""
    rows = [{"id": i, "a": i, "b": i, "c": i} for i in range(9_000)]
    scope = {"previous_step_outputs": {"big": rows, "small": {"x": 1}}}

    def run() -> Any:
        task = TaskBudget(lambda: 1, MAX_TASK_STEPS, EVALUATION_STEPS)
        share_per_task(task)
        charge_variables(True)
        value = evaluate("previous_step_outputs.small.x", scope)
        return value, task.current().left

    value, left = contextvars.copy_context().run(run)
    assert value == 1
    assert MAX_TASK_STEPS - left >= 45_000 // 4  # the conversion was paid, from the share


def test_compiling_is_paid_from_the_tasks_share_once_a_share_for_each_source() -> None:
    """Compiling (lark's parse) ran unpaid in the workflow task: hundreds of distinct long
    expressions held one task for seconds. Now each source's compiling is paid from the
    share, once a share, whether or not the process had it compiled; not from the
    evaluation's own budget (an expression that fits it still does)."""
    source = f"size({literal(400)})"  # about 4,000 syntax-tree nodes

    def run() -> list[int]:
        task = [1]
        budget = TaskBudget(lambda: task[0], MAX_TASK_STEPS, EVALUATION_STEPS)
        share_per_task(budget)
        costs = []
        for key in (1, 1, 2):
            task[0] = key
            before = budget.current().left
            assert evaluate(source, {}) == 400
            costs.append(before - budget.current().left)
        return costs

    first, again, next_share = contextvars.copy_context().run(run)
    assert first - again >= 4 * 4_000  # COMPILE_STEPS_PER_NODE a node
    assert next_share == first


def test_a_share_is_low_once_it_cannot_pay_for_an_evaluation_and_its_compiling() -> None:
    def run() -> tuple[bool, bool]:
        budget = TaskBudget(lambda: 1, MAX_TASK_STEPS, EVALUATION_STEPS)
        share_per_task(budget)
        evaluate("1", {})
        budget.current().spend(budget.current().left - 30_000)
        roomy = task_share_low()
        budget.current().spend(1)
        return roomy, task_share_low()

    # An evaluation's own 10,000 steps and MAX_COMPILE_STEPS (20,000) for its compiling.
    assert contextvars.copy_context().run(run) == (False, True)


def test_compiled_programs_kept_are_bounded_by_their_syntax_trees_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two hundred kept programs of 9,000 nodes each (within the characters kept) made the
    garbage collector's full passes take 2-3 s, inside workflow tasks: the programs kept
    are bounded by their compiling steps (four a node) as well."""
    from temporal_workflows import expressions

    monkeypatch.setattr(expressions, "_PROGRAMS", type(expressions._PROGRAMS)())
    monkeypatch.setattr(expressions, "_kept_chars", 0)
    monkeypatch.setattr(expressions, "_kept_steps", 0)
    sources = [f"size({literal(400)}) + {i}" for i in range(30)]  # ~4,000 nodes each
    for source in sources:
        expressions.evaluate(source, {})
    assert expressions._kept_chars < expressions.PROGRAMS_KEPT_CHARS
    assert 0 < expressions._kept_steps <= expressions.PROGRAMS_KEPT_STEPS
    assert expressions._kept_steps == sum(p[5] for p in expressions._PROGRAMS.values())
    assert sources[0] not in expressions._PROGRAMS and sources[-1] in expressions._PROGRAMS
