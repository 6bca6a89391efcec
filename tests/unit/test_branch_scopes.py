"""A branch's scope carried across continue-as-new as what it changed since its fork restores
to the same scope as the whole copy older workers carried (and those still restore).

The scopes are built as fanout.py and containers.py build them: map items and parallel
children forked from the scope before them, a parallel nested in an item, a loop in a
branch; done branches and ones parked before they changed anything. Each state goes
through JSON, as it does across continue-as-new, and the restored tree is carried again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporal_workflows.frames import ScopeState
from temporal_workflows.scope import Scope

ROWS = [f"row-{i}-" + "x" * 40 for i in range(50)]


@dataclass
class Tree:
    """A scope and the branches forked from it (a map's items or a parallel's children)."""

    scope: Scope
    branches: list[Tree] = field(default_factory=list)


def _whole_copy(branch: Scope) -> ScopeState:
    """What workers before the fix carried for a branch: a copy of all its data."""
    return ScopeState(
        previous_step_content=branch.previous_step_content,
        previous_step_outputs=branch.previous_step_outputs,
        extra=branch.extra,
        written=list(branch.written),
    )


def _carried(state: ScopeState) -> ScopeState:
    return ScopeState.model_validate_json(state.model_dump_json())


def _restored(parent: Scope, state: ScopeState) -> Scope:
    """fanout's restore: a fork of the restored parent, the carried state over it."""
    branch = parent.fork()
    branch.restore(_carried(state))
    return branch


def _top(tree: Tree) -> Scope:
    """The top scope, carried in the resume point (always whole) and restored."""
    live = tree.scope
    top = Scope(input=live.input, additional_data=live.additional_data, session_state={})
    whole = ScopeState(
        previous_step_content=live.previous_step_content,
        previous_step_outputs=live.previous_step_outputs,
        extra=live.extra,
    )
    top.restore(_carried(whole))
    return top


def _restore_both(live: Tree, by_delta: Scope, by_copy: Scope) -> Tree:
    """Each branch restored from its delta and from its whole copy: the same scope."""
    branches: list[Tree] = []
    for branch in live.branches:
        delta = branch.scope.state(live.scope)
        from_delta = _restored(by_delta, delta)
        from_copy = _restored(by_copy, _whole_copy(branch.scope))
        assert from_delta == from_copy
        assert delta.model_dump_json().count("row-7-") <= 1  # the list is not in it
        branches.append(_restore_both(branch, from_delta, from_copy))
    return Tree(by_delta, branches)


def _item(parent: Scope, index: int) -> Scope:
    branch = parent.fork()
    branch.extra.update(item=ROWS[index], index=index)
    return branch


def _run_tree() -> Tree:
    """A map over a long list, inside a loop; items in every state a run leaves them."""
    top = Scope(input={"rows": ROWS}, additional_data={"k": 1}, session_state={})
    top.extra.update(iteration=2, loop_outputs=[{"n": 0}, {"n": 1}])
    top.record("list", {"rows": ROWS})
    items: list[Tree] = []
    done = _item(top, 0)
    done.record("a", {"slept": 0})
    done.record("each", {"row": ROWS[0]})
    items.append(Tree(done))
    items.append(Tree(_item(top, 1)))  # parked before its first child
    nested = _item(top, 2)
    nested.record("a", {"slept": 0})
    children = [nested.fork() for _ in range(3)]
    children[0].record("x", {"x": 1})  # a done parallel child
    children[2].extra.update(iteration=0, loop_outputs=[])  # a loop in a child, parked
    children[2].record("t", {"t": 0})
    items.append(Tree(nested, [Tree(c) for c in children]))
    looped = _item(top, 3)
    outer = {k: looped.extra.get(k) for k in ("iteration", "loop_outputs")}
    looped.extra.update(iteration=1, loop_outputs=[{"y": 0}])
    looped.record("y", {"y": 1})
    looped.extra.update(outer)  # the loop ended: the enclosing loop's variables again
    looped.record("L", [{"y": 0}, {"y": 1}])
    items.append(Tree(looped))
    skipped = _item(top, 4)
    skipped.set_output("s", None)  # a skipped node: null output, content unchanged
    items.append(Tree(skipped))
    return Tree(top, items)


def test_branch_scopes_restore_from_what_they_changed_as_from_whole_copies() -> None:
    live = _run_tree()
    once = _restore_both(live, _top(live), _top(live))
    # Carried again by the next execution: the restored tree is the live one now.
    _restore_both(once, _top(once), _top(once))


def test_a_branch_that_changed_nothing_carries_nothing_of_its_parent() -> None:
    live = _run_tree()
    parked = live.branches[1].scope.state(live.scope)
    assert parked.content_carried is False and parked.previous_step_content is None
    assert parked.previous_step_outputs == {} and parked.extra == {"item": ROWS[1], "index": 1}
    done = live.branches[0].scope.state(live.scope)
    assert done.content_carried and done.previous_step_content == {"row": ROWS[0]}
    assert list(done.previous_step_outputs) == ["a", "each"] == done.written


def test_a_whole_copy_from_an_older_worker_restores_as_before() -> None:
    parent = Scope(input={}, additional_data={}, session_state={})
    parent.record("list", ROWS)
    for written, expected in ((["a"], ["a"]), (None, ["list", "a"])):
        old = {
            "previousStepContent": {"a": 1},
            "previousStepOutputs": {"list": ROWS, "a": {"a": 1}},
            "extra": {"item": "i", "index": 0},
            "written": written,
        }
        branch = parent.fork()
        branch.restore(ScopeState.model_validate(old))
        assert branch.previous_step_content == {"a": 1}
        assert branch.previous_step_outputs == {"list": ROWS, "a": {"a": 1}}
        assert branch.extra == {"item": "i", "index": 0}
        assert list(branch.written) == expected
