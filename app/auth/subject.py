"""What a token's `sub` may hold: an identity grants and approver lists can name."""

from __future__ import annotations

import unicodedata


def unnameable(sub: str) -> str | None:
    """What in a `sub` makes it unusable as an identity, or None: whitespace (a grant's
    principal is `user:<sub>` without any) or a control character (a newline in an owner
    forged a line in logs and in the CLI's output)."""
    found = next((c for c in sub if c.isspace() or unicodedata.category(c) == "Cc"), None)
    if found is None:
        return None
    kind = "whitespace" if found.isspace() else "a control character"
    return f"{kind} (U+{ord(found):04X})"
