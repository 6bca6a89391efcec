"""A principal: `user:<sub>` or `role:<role>`, who a grant shares a workflow with and who
an approver list lets decide a gate. One rule for the name after the colon, used by
grants, approvers, a token's `sub` and the CLI (docs/security.md, "Principals").

Imports nothing but the standard library: the CLI loads it without pydantic.
"""

from __future__ import annotations

import re
import unicodedata

MAX_PRINCIPAL_NAME = 200
# What a name may not hold, spelled out so ECMA (OpenAPI's), Rust (pydantic's) and Python
# regexes read it alike (`\s` is another set in each): Python's whitespace (str.isspace(),
# U+001C-U+001F and U+0085 too), control characters (Cc) and, in the Basic Multilingual
# Plane, format characters (Cf: bidi controls, zero-width ones, U+FEFF, U+00AD), which
# hide or reorder text (`bob\u202e` read as `bob`). Cf past U+FFFF cannot be spelled in
# an ECMA pattern without the `u` flag. tests/unit/test_principals.py holds this equal to
# unicodedata over the whole BMP.
HIDDEN = (
    r"\u0000-\u0020\u007F-\u00A0\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890-\u0891"
    r"\u08E2\u1680\u180E\u2000-\u200F\u2028-\u202F\u205F-\u2064\u2066-\u206F\u3000"
    r"\uFEFF\uFFF9-\uFFFB"
)
PRINCIPAL_NAME_PATTERN = rf"^[^{HIDDEN}]{{1,{MAX_PRINCIPAL_NAME}}}$"
PRINCIPAL_PATTERN = rf"^(user|role):[^{HIDDEN}]{{1,{MAX_PRINCIPAL_NAME}}}$"
KINDS = ("user:", "role:")

_HIDDEN = re.compile(f"[{HIDDEN}]")
_HIDDEN_RUNS = re.compile(f"[{HIDDEN}]+")


def name_problem(name: str) -> str | None:
    """What makes `name` (a `sub`, or a principal's part after the colon) unusable, or
    None: 'is empty', 'holds whitespace (U+0020)', 'is 300 characters long (at most 200)'."""
    if not name:
        return "is empty"
    found = _HIDDEN.search(name)
    if found is not None:
        char = found.group()
        kind = (
            "whitespace"
            if char.isspace()
            else "a control character"
            if unicodedata.category(char) == "Cc"
            else "a format character"
        )
        return f"holds {kind} (U+{ord(char):04X})"
    if len(name) > MAX_PRINCIPAL_NAME:
        return f"is {len(name)} characters long (at most {MAX_PRINCIPAL_NAME})"
    return None


def principal_problem(principal: str) -> str | None:
    """What makes `principal` no `user:<sub>` or `role:<role>`, or None."""
    shape = "must be 'user:<sub>' or 'role:<role>'"
    kind = principal[:5]
    if kind not in KINDS:
        return shape
    problem = name_problem(principal[5:])
    return None if problem is None else f"{shape}: the name after {kind!r} {problem}"


def shown_name(value: str, limit: int) -> str | None:
    """`value` fit to show: each run of whitespace, control or format characters one
    space, the ends stripped, at most `limit` characters; None when nothing is left."""
    cleaned = _HIDDEN_RUNS.sub(" ", value).strip()[:limit].rstrip()
    return cleaned or None
