"""One rule for a principal's name (temporal_workflows/principals.py), read alike by Python's
re (approvers, a `sub`, the CLI), pydantic's Rust regex and an ECMA reading of the OpenAPI
pattern (jsonschema-rs): `\\s` was another set in each (`user:a\\x1cb` a grant, no approver)."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

import jsonschema_rs
from pydantic import StringConstraints, TypeAdapter, ValidationError

from temporal_workflows.principals import (
    PRINCIPAL_PATTERN,
    name_problem,
    principal_problem,
    shown_name,
)

BMP = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]


def hidden(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf")


def test_the_refused_characters_are_whitespace_controls_and_format_characters() -> None:
    assert [c for c in BMP if hidden(c) != bool(name_problem(f"a{c}b"))] == []
    for c in ("\x1c", "\x85", "\xa0", "\u2003", "\u2028", "\u3000"):
        assert f"holds whitespace (U+{ord(c):04X})" == name_problem(c)
    for c in ("\x00", "\x1b", "\x7f", "\x9f"):
        assert f"holds a control character (U+{ord(c):04X})" == name_problem(c)
    for c in ("\u202e", "\u2066", "\u200e", "\u200b", "\u2060", "\ufeff", "\xad"):
        assert f"holds a format character (U+{ord(c):04X})" == name_problem(c)


def test_python_rust_and_ecma_read_the_pattern_alike() -> None:
    assert "\\s" not in PRINCIPAL_PATTERN
    python = re.compile(PRINCIPAL_PATTERN)
    rust = TypeAdapter(Annotated[str, StringConstraints(pattern=PRINCIPAL_PATTERN)])
    ecma = jsonschema_rs.validator_for({"type": "string", "pattern": PRINCIPAL_PATTERN})

    def by_rust(value: str) -> bool:
        try:
            rust.validate_python(value)
        except ValidationError:
            return False
        return True

    for char in BMP:
        value = f"user:a{char}b"
        expected = not hidden(char)
        assert bool(python.fullmatch(value)) == expected, hex(ord(char))
        assert by_rust(value) == expected, hex(ord(char))
        assert ecma.is_valid(value) == expected, hex(ord(char))


def test_names_are_one_to_200_characters_of_any_script() -> None:
    for good in ("user:zoë", "role:財務", "user:" + "x" * 200, "role:a:b@c/d"):
        assert principal_problem(good) is None, good
    assert principal_problem("user:" + "x" * 201) == (
        "must be 'user:<sub>' or 'role:<role>': the name after 'user:' is 201 characters "
        "long (at most 200)"
    )
    assert name_problem("") == "is empty"
    for bad in ("bob", "group:x", "User:bob", "user:"):
        assert principal_problem(bad), bad


def test_a_shown_name_keeps_its_words_and_drops_what_hides_or_forges() -> None:
    assert shown_name("  Ada\n\x1b[31mLove\u202elace \u200b ", 200) == "Ada [31mLove lace"
    assert shown_name("Zoë 財務", 200) == "Zoë 財務"
    assert shown_name("\n\x00\u202e ", 200) is None
    long = shown_name("a" * 30_000 + "\n", 200)
    assert long == "a" * 200
    assert shown_name("a" * 199 + " b", 200) == "a" * 199
