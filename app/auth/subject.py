"""What a token's `sub` and display name may hold (docs/security.md, "Principals")."""

from __future__ import annotations

from temporal_workflows.principals import name_problem, shown_name

# The longest display name (`triggeredBy.username`) kept of a token's name claim.
MAX_DISPLAY_NAME = 200


def unnameable(sub: str) -> str | None:
    """What in a `sub` makes it unusable as an identity, or None: what no grant or
    approver (`user:<sub>`) could name: whitespace, a control or format character (a
    newline in an owner forged a line in logs and in the CLI's output; `bob\\u202e` read
    as `bob`), or more than 200 characters."""
    return name_problem(sub)


def display_name(claim: object) -> str | None:
    """A token's name claim as a run records it: display only, so cleaned, not refused
    (each run of whitespace, control or format characters one space, at most
    MAX_DISPLAY_NAME characters); None when it is no string or blank."""
    return shown_name(claim, MAX_DISPLAY_NAME) if isinstance(claim, str) else None
