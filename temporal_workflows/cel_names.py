"""The variables a run's scope offers, those a CEL expression reads (the names it does
not bind itself), and the functions it calls.

A comprehension macro (`list.exists(x, x > 1)`, also `all`, `exists_one`, `map`,
`filter`) binds its first argument inside its other arguments; every other identifier
that starts an expression (`input` in `input.items`, `.input` too) is read from the
run's scope when it is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lark import Token, Tree

# The names a CEL expression or template may read (documented in docs/semantics.md).
SCOPE_VARIABLES = frozenset(
    {
        "input",
        "previous_step_content",
        "previous_step_outputs",
        "additional_data",
        "session_state",
        "step_choices",
        "user_input",
        "rejection_feedback",
        "iteration",
        "iteration_outputs",
        "loop_outputs",
        "item",
        "index",
    }
)

# A name alone: an identifier CEL reads (a template's `{{ city }}` means `input.city`).
BARE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Macros whose first argument names the element inside the others.
BINDING_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


def free_names(ast: Tree[Token]) -> list[str]:
    """The identifiers `ast` reads that it does not bind, in order, once each."""
    return list(dict.fromkeys(_free(ast, frozenset())))


def _free(node: Tree[Token] | Token, bound: frozenset[str]) -> Iterator[str]:
    if not isinstance(node, Tree):
        return
    if node.data in ("ident", "dot_ident"):
        name = str(node.children[0])
        if name not in bound:
            yield name
        return
    if node.data == "member_dot_arg":
        target, method, *rest = node.children
        yield from _free(target, bound)
        args = rest[0].children if rest and isinstance(rest[0], Tree) else []
        element = _bare_ident(args[0]) if args else None
        if str(method) == REDUCE and len(args) == 4:
            names = {_bare_ident(args[0]), _bare_ident(args[1])} - {None}
            yield from _free(args[2], bound)
            yield from _free(args[3], bound | {n for n in names if n is not None})
            return
        if str(method) in BINDING_MACROS and element is not None and len(args) >= 2:
            for arg in args[1:]:
                yield from _free(arg, bound | {element})
            return
        for arg in args:
            yield from _free(arg, bound)
        return
    for child in node.children:
        yield from _free(child, bound)


def _bare_ident(node: Tree[Token] | Token) -> str | None:
    """The name when `node` is an identifier alone (`x`), else None."""
    while isinstance(node, Tree) and len(node.children) == 1 and node.data != "ident":
        node = node.children[0]
    if isinstance(node, Tree) and node.data == "ident":
        return str(node.children[0])
    return None


# cel-python's extension macros: `list.reduce(r, i, init, expr)` binds its first two
# arguments inside its fourth; `list.min()` binds nothing.
REDUCE = "reduce"
# Function-like macros: the parser keeps them as calls, the evaluator expands them.
MACROS = frozenset({"has", "dyn", REDUCE, "min"}) | BINDING_MACROS


def called_names(ast: Tree[Token]) -> list[str]:
    """The functions and methods `ast` calls (`size(x)`, `x.startsWith(y)`), once each; a
    call with a leading dot (`.size(x)`) as `.size`."""
    called = (
        str(node.children[1])
        if node.data == "member_dot_arg"
        else ("." if node.data == "dot_ident_arg" else "") + str(node.children[0])
        for node in ast.iter_subtrees()
        if node.data in ("ident_arg", "member_dot_arg", "dot_ident_arg")
    )
    return list(dict.fromkeys(called))
