"""What a token's `sub` may hold (docs/security.md, "Principals")."""

from __future__ import annotations

from temporal_workflows.principals import name_problem


def unnameable(sub: str) -> str | None:
    """What in a `sub` makes it unusable as an identity, or None: what no grant or
    approver (`user:<sub>`) could name: whitespace, a control or format character (a
    newline in an owner forged a line in logs and in the CLI's output; `bob\\u202e` read
    as `bob`), or more than 200 characters."""
    return name_problem(sub)
