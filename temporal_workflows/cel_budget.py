"""What one CEL evaluation may cost: a step budget, deterministic, so it is safe inside the
workflow sandbox (a wall-clock timeout would not replay the same way).

Cost model (docs/semantics.md, "What an expression may cost"): a step for every syntax-tree
node each time it is evaluated, `ITERATION_STEPS` more for each element a comprehension
visits, and a step for every `ELEMENTS_PER_STEP` list or map elements and every
`CHARS_PER_STEP` characters of each value an operator or function reads (counted deep);
in a workflow task, compiling too (`compile_steps`, paid from the task's share).
Save time refuses what cannot fit (`static_problem`).

cel-python's `||`, `&&`, `all` and `exists` describe two failed operands by their text,
which holds the text of the errors before them: the message doubles with each one, and
thirty of them fill memory. Ours keep the first error instead (and stop early, as CEL may).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from temporal_workflows.cel_null import null_aware
from temporal_workflows.cel_string import converted

# One evaluation (a condition, an end condition, one step's whole config, one transform
# map) in a run started before EVALUATION_STEPS, or outside a workflow: they replay as ran.
MAX_STEPS = 50_000
# One evaluation in a run started now (RunInput.expression_steps). cel-python takes 9-38
# microseconds a step (measured idle on a two-core machine, by the expression's shape; much
# of it rebuilding typing generics per call), so one costly expression holds a workflow task
# at most about 0.4 s of a core. 50,000 took 1.5-1.9 s idle, past Temporal's 2 s on a loaded
# core: the SDK interrupts such a task, the workflow cannot be evicted after it, and the
# worker's shutdown waits for ever (a test suite hung on it).
EVALUATION_STEPS = 10_000
# All evaluations of one workflow task together (TaskBudget): many cheap ones (a map of a
# thousand items, each rendering its config: about 31,000 steps, 0.5 s idle) must still fit,
# while many costly ones ready at once stay bounded. Twice this was seen past 2 s on a
# busy two-core machine. Runs carry it in their input (RunInput.expression_task_steps), so
# runs started with another replay with theirs.
MAX_TASK_STEPS = 50_000
ITERATION_STEPS = 10
ELEMENTS_PER_STEP = 4
CHARS_PER_STEP = 1_024
# Compiling an expression (lark's parse and our checks of its tree, in the workflow task
# when the process has not compiled that source yet) costs COMPILE_STEPS_PER_NODE steps a
# syntax-tree node and a step every COMPILE_CHARS_PER_STEP characters of source. Measured
# inside a worker on a two-core machine at a load of 8-10: a 4,800-character template of
# 9,060 nodes took 0.45 s to compile (~50 microseconds a node) and 0.1 s to evaluate
# (~12 a step); 4,000 characters of one string literal compile in under a millisecond.
COMPILE_STEPS_PER_NODE = 4
COMPILE_CHARS_PER_STEP = 128
# Save refuses an expression, a config's templates or a transform's map whose compiling
# costs more; a share is low once it cannot pay for an evaluation and this much compiling.
MAX_COMPILE_STEPS = 20_000
# Nested comprehensions cost the product of their lists' sizes; refused past this at save.
MAX_COMPREHENSION_NESTING = 3
# Deeper syntax trees would exhaust Python's stack while evaluating (refused at save).
MAX_TREE_DEPTH = 250
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter", "reduce", "min"})
# Constant-time functions: a big operand costs them nothing.
_FREE = frozenset({"size", "_[_]", "_?_:_", "!_"})


class BudgetExceeded(Exception):
    """An evaluation spent its budget (not a CEL error, so no CEL operator absorbs it)."""


class Budget:
    """The steps left to one evaluation, which may span several expressions; each step is
    charged to `shared` too when the evaluation runs inside a workflow task. Running out
    says "<needs> more than <limit> steps"."""

    def __init__(
        self, steps: int = MAX_STEPS, shared: Budget | None = None, needs: str = "it needs"
    ) -> None:
        self.limit = steps
        self.left = steps
        self.shared = shared
        self._needs = needs
        # A workflow task's share only: the programs its evaluations compiled (each paid
        # for once), kept while the share lasts so none is compiled twice unpaid.
        self.compiled: dict[str, Any] = {}

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise BudgetExceeded(f"{self._needs} more than {self.limit} steps")
        if self.shared is not None:
            self.shared.spend(steps)


class TaskBudget:
    """The steps all evaluations of one workflow task share. Temporal takes a task that runs
    2 s as deadlocked and retries it for ever, so many costly expressions ready at once (the
    branches of a parallel node) must not add up past a bound (MAX_TASK_STEPS, as much as one
    evaluation's) however many there are.

    `task` names the current workflow task deterministically (the history's length when
    it started, and the slice of inline steps and containers' expressions within it), so
    a replay charges the same evaluations to the same share.
    """

    def __init__(
        self,
        task: Callable[[], Hashable],
        steps: int = MAX_TASK_STEPS,
        evaluation_steps: int | None = EVALUATION_STEPS,
    ) -> None:
        self._task = task
        self._steps = steps
        # What one evaluation in the task may spend (None: MAX_STEPS, as runs started
        # before EVALUATION_STEPS had).
        self.evaluation_steps = evaluation_steps or MAX_STEPS
        # Whether compiling is charged to the shares (a patch, asked at the run's first
        # evaluation in a task: expressions.COMPILE_CHARGE_PATCH); None until then. Never
        # in runs started before EVALUATION_STEPS, whose evaluations may take a whole share.
        self.compiling_charged: bool | None = None if evaluation_steps else False
        self._key: Hashable = None
        self._share = self._fresh()

    def current(self) -> Budget:
        key = self._task()
        if key != self._key:
            self._key, self._share = key, self._fresh()
        return self._share

    def _fresh(self) -> Budget:
        return Budget(
            self._steps, needs="the expressions evaluated in one workflow task together need"
        )


_CURRENT: contextvars.ContextVar[Budget] = contextvars.ContextVar("cel_budget")
_TASK: contextvars.ContextVar[TaskBudget] = contextvars.ContextVar("cel_task_budget")


# Whether an evaluation pays for the size of its result. Off only for runs started before
# it was (RunInput.results_charged is False), so that they replay as they ran.
_RESULTS_CHARGED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cel_results_charged", default=True
)


def charge_results(on: bool) -> None:
    """Charge (or not) the results of evaluations in this context (and tasks it starts)."""
    _RESULTS_CHARGED.set(on)


def charge_result(budget: Budget, result: Any) -> None:
    """Charge what copying `result` out of CEL costs. A comprehension makes a value that
    shares one big string a thousand times in a few steps; copying it out, and the
    workflow task serialising it, would take gigabytes and minutes."""
    if _RESULTS_CHARGED.get():
        budget.spend(operand_steps(result, budget.left + 1))


# Whether an evaluation pays for converting the variables it reads into CEL values. Off
# only for runs started before it was (RunInput.variables_charged is False).
_VARIABLES_CHARGED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cel_variables_charged", default=True
)


def charge_variables(on: bool) -> None:
    """Charge (or not) the variables evaluations in this context convert."""
    _VARIABLES_CHARGED.set(on)


def charge_variable(budget: Budget, value: Any) -> None:
    """Charge converting `value` into CEL to the workflow task's share (to the evaluation's
    own budget outside a workflow task): a step for every `ELEMENTS_PER_STEP` list or map
    elements, counted deep. cel-python converts a variable whole (~7 microseconds an
    element) before the expression reads any of it, so `size(input.xs)` over 300,000
    numbers held the workflow task 2 s and it was retried for ever. Not to the evaluation's
    own budget: `previous_step_outputs.small.x` converts every earlier output, and 40,000
    elements of them (0.3 s) would fail every expression naming it. A string converts as
    one copy (10 MB: ~2 ms), so its characters are not charged here; reading them is."""
    if not _VARIABLES_CHARGED.get():
        return
    payer = budget.shared or budget
    elements, _ = _counted(value, (payer.left + 1) * ELEMENTS_PER_STEP)
    payer.spend(elements // ELEMENTS_PER_STEP)


def task_share_low() -> bool:
    """Whether this workflow task's share has less left than one evaluation may take (a
    chain of inline steps or containers' expressions then ends its slice: inline_slices.py):
    its own budget, and MAX_COMPILE_STEPS more for compiling its expressions where that is
    charged (save time refuses expressions whose compiling would take more)."""
    task_budget = _TASK.get(None)
    if task_budget is None:
        return False
    compiling = MAX_COMPILE_STEPS if task_budget.compiling_charged else 0
    return task_budget.current().left < task_budget.evaluation_steps + compiling


def compile_steps(nodes: int, chars: int) -> int:
    """What compiling an expression of `nodes` syntax-tree nodes and `chars` characters costs."""
    return nodes * COMPILE_STEPS_PER_NODE + chars // COMPILE_CHARS_PER_STEP


def compiling_charged(ask: Callable[[], bool]) -> bool:
    """Whether this workflow task's evaluations pay for compiling; `ask` (the patch) is
    called once per run, at its first evaluation in a workflow task. False outside one."""
    task_budget = _TASK.get(None)
    if task_budget is None:
        return False
    if task_budget.compiling_charged is None:
        task_budget.compiling_charged = ask()
    return task_budget.compiling_charged


def share_per_task(task_budget: TaskBudget) -> None:
    """Charge evaluations in this context (and the tasks it starts) to `task_budget`."""
    _TASK.set(task_budget)


def fresh_budget() -> Budget:
    """A budget for one evaluation, drawing on the workflow task's share when there is one."""
    task_budget = _TASK.get(None)
    if task_budget is None:
        return Budget()
    return Budget(task_budget.evaluation_steps, shared=task_budget.current())


def charging(budget: Budget) -> contextvars.Token[Budget]:
    """Make `budget` the one evaluations in this context spend; undo with `release`."""
    return _CURRENT.set(budget)


def release(token: contextvars.Token[Budget]) -> None:
    _CURRENT.reset(token)


def _spend(steps: int) -> None:
    budget = _CURRENT.get(None)
    if budget is not None:
        budget.spend(steps)


def _spend_reading(values: Any) -> None:
    budget = _CURRENT.get(None)
    if budget is not None:
        budget.spend(sum(operand_steps(v, max(budget.left, 0) + 1) for v in values))


def operand_steps(value: Any, cap: int) -> int:
    """What reading `value` costs, counting no further than about `cap` steps."""
    elements, chars = _counted(value, cap * ELEMENTS_PER_STEP)
    return elements // ELEMENTS_PER_STEP + chars // CHARS_PER_STEP


def _counted(value: Any, element_limit: int) -> tuple[int, int]:
    """The list or map elements and the characters `value` holds, counted deep, until the
    elements reach `element_limit`."""
    elements = chars = 0
    stack = [value]
    while stack and elements < element_limit:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            chars += len(item)
        elif isinstance(item, dict):
            elements += len(item)
            stack += item.values()
        elif isinstance(item, list):
            elements += len(item)
            stack += item
    return elements, chars


def _either(x: Any, y: Any, keep: bool) -> Any:
    """`x || y` (keep=True) or `x && y` (keep=False): a bool that decides wins; else the
    first error; never a message made of both operands."""
    for value in (x, y):
        if isinstance(value, celtypes.BoolType) and bool(value) == keep:
            return value
    for value in (x, y):
        if isinstance(value, CELEvalError):
            return value
    if isinstance(x, celtypes.BoolType) and isinstance(y, celtypes.BoolType):
        return celtypes.BoolType(not keep)
    raise TypeError("no such overload")


def _chosen(condition: Any, x: Any, y: Any) -> Any:
    """`condition ? x : y`. A condition that failed answers its own error, as CEL's errors
    propagate: cel-python's said "no matching overload for _?_:_ applied to
    (CELEvalError, string, bool)", hiding the cause (a mismatch, a missing key)."""
    if isinstance(condition, CELEvalError):
        return condition
    return base_functions["_?_:_"](condition, x, y)


def _charged(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        _spend_reading(args)
        return function(*args)

    call.__name__ = getattr(function, "__name__", "function")
    return call


# Every operator and function reads its operands through these (types stay types, so
# `type(x) == int` still holds; `BudgetedEvaluator.function_eval` charges conversions).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: function if name in _FREE or isinstance(function, type) else _charged(function)
    for name, function in base_functions.items()
} | {
    "_||_": lambda x, y: _either(x, y, keep=True),
    "_&&_": lambda x, y: _either(x, y, keep=False),
    "_?_:_": _chosen,
    "_==_": _charged(null_aware(base_functions["_==_"], negate=False)),
    "_!=_": _charged(null_aware(base_functions["_!=_"], negate=True)),
}


class BudgetedEvaluator(Evaluator):
    """cel-python's evaluator, charging the budget for what it evaluates."""

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        # lark's Interpreter routes every node, the root and each child, through here.
        _spend(1)
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return BudgetedEvaluator(ast, activation=self.activation)

    def evaluate(self, context: Any = None) -> celtypes.Value:
        # Each comprehension element builds a fresh activation: far dearer than a node.
        _spend(ITERATION_STEPS)
        return super().evaluate(context)

    def function_eval(self, name_token: lark.Token, exprlist: Any = None) -> Any:
        if isinstance(base_functions.get(name_token.value), type) and isinstance(exprlist, list):
            _spend_reading(exprlist)  # a conversion such as string(list) reads its operand
            if name_token.value == "string" and len(exprlist) == 1:
                try:
                    text = converted(exprlist[0])
                except ValueError as exc:
                    return CELEvalError(str(exc), ValueError, None)
                if text is not None:
                    return text
        return super().function_eval(name_token, exprlist)

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        name = tree.children[1]
        if name in ("all", "exists", "exists_one"):
            return self._quantifier(tree, str(name))
        if name == "min":  # walks its list without evaluating a node per element
            _spend_reading([self.visit(tree.children[0])])
        return super().member_dot_arg(tree)

    def _quantifier(self, tree: lark.Tree[Any], name: str) -> Any:
        """`all`, `exists` (stopping at the first element that decides) and `exists_one`."""
        items = self.visit(tree.children[0])
        if isinstance(items, CELEvalError):
            return items
        predicate = self.build_ss_macro_eval(tree)
        error: CELEvalError | None = None
        matches = 0
        for item in items:
            value = predicate(item)
            if not isinstance(value, celtypes.BoolType):
                if error is None:
                    error = (
                        value
                        if isinstance(value, CELEvalError)
                        else CELEvalError(f"{name}() needs a bool predicate", TypeError, ())
                    )
                if name == "exists_one":
                    return error
                continue
            if name == "exists" and value:
                return celtypes.BoolType(True)
            if name == "all" and not value:
                return celtypes.BoolType(False)
            matches += bool(value)
        if error is not None:
            return error
        if name == "exists_one":
            return celtypes.BoolType(matches == 1)
        return celtypes.BoolType(name == "all")


class BudgetedRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> celtypes.Value:
        activation: Activation = self.new_activation()
        return BudgetedEvaluator(ast=self.ast, activation=activation).evaluate(context)


def least_steps(ast: lark.Tree[Any]) -> int:
    """The fewest steps evaluating the expression takes, whatever the data."""
    return _least_steps(ast)


def static_problem(ast: lark.Tree[Any]) -> str | None:
    """Why an expression cannot fit its budget whatever the data, or None."""
    depth = _depth(ast)
    if depth > MAX_TREE_DEPTH:
        return f"it nests too deeply ({depth} levels; at most {MAX_TREE_DEPTH})"
    nesting = _nesting(ast)
    if nesting > MAX_COMPREHENSION_NESTING:
        return (
            f"its comprehensions (all, exists, exists_one, map, filter) nest {nesting} deep; "
            f"at most {MAX_COMPREHENSION_NESTING} may"
        )
    steps = _least_steps(ast)
    if steps > EVALUATION_STEPS:
        return f"evaluating it takes at least {steps} steps; the budget is {EVALUATION_STEPS}"
    return None


def _macro(tree: lark.Tree[Any]) -> bool:
    return tree.data == "member_dot_arg" and tree.children[1] in COMPREHENSIONS


def _subtrees(tree: lark.Tree[Any]) -> Iterator[lark.Tree[Any]]:
    return (c for c in tree.children if isinstance(c, lark.Tree))


def _depth(tree: lark.Tree[Any]) -> int:
    # Iterative: the tree being measured may be deeper than Python's stack.
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack += [(c, depth + 1) for c in _subtrees(node)]
    return deepest


def _nesting(tree: lark.Tree[Any]) -> int:
    """How deep comprehensions nest inside each other's bodies."""
    if not _macro(tree):
        return max((_nesting(c) for c in _subtrees(tree)), default=0)
    target, *rest = _subtrees(tree)
    return max(_nesting(target), 1 + max((_nesting(c) for c in rest), default=0))


def _least_steps(tree: lark.Tree[Any]) -> int:
    """Steps evaluation surely takes: each node once, and a comprehension's body once per
    element of a list literal it walks (lists known only at run time may be empty)."""
    if not _macro(tree):
        return 1 + sum(_least_steps(c) for c in _subtrees(tree))
    target, *rest = _subtrees(tree)
    body = ITERATION_STEPS + sum(_least_steps(c) for c in rest)
    return 1 + _least_steps(target) + _literal_length(target) * body


def _literal_length(tree: lark.Tree[Any]) -> int:
    """How many elements a list literal has (0 when the list is not a literal)."""
    while tree.data != "list_lit":
        children = list(_subtrees(tree))
        if len(children) != 1 or len(tree.children) != 1:
            return 0
        tree = children[0]
    items = list(_subtrees(tree))
    return len(list(_subtrees(items[0]))) if items else 0
