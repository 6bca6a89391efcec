"""`{{ … }}` templates cut into their literal text and the CEL sources of their placeholders:
text work only, no evaluation (expressions.render evaluates the parts; save-time checks
read the same parts, so a definition that saves evaluates what was checked)."""

from __future__ import annotations

from dataclasses import dataclass

from temporal_workflows.cel_names import BARE_NAME, SCOPE_VARIABLES


@dataclass(frozen=True)
class Placeholder:
    """One `{{ … }}` of a template string: the CEL source it evaluates."""

    source: str


def template_parts(text: str) -> list[str | Placeholder]:
    """A string as its literal text and its `{{ … }}` placeholders, in order.

    A placeholder ends at the first `}}` outside a CEL string literal and outside a map
    literal's braces. A `{{` that is never closed stays literal text (save time refuses it).
    """
    parts: list[str | Placeholder] = []
    pos = 0
    while (start := text.find("{{", pos)) != -1:
        end = _placeholder_end(text, start + 2)
        if end is None:
            break
        if start > pos:
            parts.append(text[pos:start])
        parts.append(Placeholder(_template_source(text[start + 2 : end].strip())))
        pos = end + 2
    if pos < len(text):
        parts.append(text[pos:])
    return parts


def _template_source(expr: str) -> str:
    if BARE_NAME.match(expr) and expr not in SCOPE_VARIABLES:
        return f"input.{expr}"
    return expr


def _placeholder_end(text: str, i: int) -> int | None:
    """Where the `}}` closing a placeholder whose expression starts at i is; None if none."""
    depth = 0  # open `{` of map literals inside the expression
    while i < len(text):
        char = text[i]
        if char in "'\"":
            end = _string_end(text, i)
            if end is None:
                return None
            i = end
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0 and text.startswith("}}", i):
                return i
            depth = max(depth - 1, 0)
        i += 1
    return None


def _string_end(text: str, i: int) -> int | None:
    """Just past the CEL string literal whose opening quote is at i; None if it never closes."""
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    # r"…" and R"…" (also with b) are raw: a backslash there escapes nothing.
    start = i
    while start > max(i - 2, 0) and text[start - 1] in "rRbB":
        start -= 1
    before = text[start - 1] if start > 0 else " "
    raw = "r" in text[start:i].lower() and not (before.isalnum() or before == "_")
    j = i + len(quote)
    while j < len(text):
        if text.startswith(quote, j):
            return j + len(quote)
        j += 1 if raw or text[j] != "\\" else 2
    return None
